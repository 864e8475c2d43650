import { BadRequest } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import type { Application } from '../../../declarations.js'
import { ASSISTANT_TOOLS, TOOL_KEYS, asSent, assistantOf, enabledTools, isToolKey } from '../ai-assistant-tools/tools.js'
import type { ToolCallData, ToolCallResult } from './ai-assistant-tool-calls.schema.js'

export type { ToolCallData, ToolCallResult }

/** Arguments that name the organization: queries for reads, bodies for create. */
const COLLECTION_TOOLS = new Set(['find_reservations', 'create_reservation', 'get_reservation_services', 'get_available_slots'])

/**
 * POST /ai-assistant-tool-calls: runs an enabled tool of an assistant through its endpoint's
 * service method, as the caller: the caller's params go along (so the tenant hook, roles and
 * validation apply exactly as over HTTP) and the answer is what the endpoint would send.
 */
export class AiAssistantToolCallService {
  constructor(private app: Application) {}

  async create(data: ToolCallData, params: Params = {}): Promise<ToolCallResult> {
    const assistant = await assistantOf(this.app, data.organization_id!, data.assistant_id)
    if (!isToolKey(data.tool)) {
      throw new BadRequest('Unknown tool', { errors: { tool: `is not a tool; tools are ${TOOL_KEYS.join(', ')}` } })
    }
    if (!enabledTools(assistant).includes(data.tool)) {
      throw new BadRequest('Tool not enabled', { errors: { tool: 'is not enabled for this assistant' } })
    }
    const args = { ...(data.arguments ?? {}) }
    if (COLLECTION_TOOLS.has(data.tool)) args.organization_id ??= data.organization_id
    const asCaller: Params = {
      provider: params.provider,
      authenticated: true,
      authentication: params.authentication,
      caller: params.caller,
      user: params.user,
      apiKey: params.apiKey
    }
    const result = await ASSISTANT_TOOLS[data.tool].run(this.app, args, asCaller)
    return { tool: data.tool, result: asSent(result) }
  }
}
