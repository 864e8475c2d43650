import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { Application } from '../../../declarations.js'
import { authenticated } from '../../../hooks/authenticate.js'
import { ASSISTANT_TOOLS, TOOL_KEYS } from './tools.js'
import { aiAssistantToolMethods, aiAssistantToolPath } from './ai-assistant-tools.shared.js'

export const aiAssistantToolSchema = Type.Object(
  {
    key: Type.String(),
    description: Type.String(),
    endpoint: Type.String(),
    arguments: Type.Object({}, { additionalProperties: true, description: 'JSON Schema of the arguments' })
  },
  { $id: 'AiAssistantTool', additionalProperties: false }
)
export type AiAssistantTool = Static<typeof aiAssistantToolSchema>

/** GET /ai-assistant-tools: every tool an assistant can enable, with the JSON Schema of its arguments. */
export class AiAssistantToolService {
  async find() {
    const data = TOOL_KEYS.map((key) => ({
      key,
      description: ASSISTANT_TOOLS[key].description,
      endpoint: ASSISTANT_TOOLS[key].endpoint,
      arguments: JSON.parse(JSON.stringify(ASSISTANT_TOOLS[key].arguments))
    }))
    return { total: data.length, limit: data.length, skip: 0, data }
  }
}

export const aiAssistantTool = (app: Application) => {
  app.use(aiAssistantToolPath, new AiAssistantToolService(), {
    methods: aiAssistantToolMethods,
    events: [],
    docs: { summary: 'List the tools an AI assistant can use, with the JSON Schema of their arguments', description: 'The tools of AI assistants (internal_tools.tools keys) and the JSON Schema of their arguments.', schemas: { result: aiAssistantToolSchema } }
  } as any)
  app.service(aiAssistantToolPath).hooks({ around: { all: [authenticated] } })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [aiAssistantToolPath]: AiAssistantToolService
  }
}
