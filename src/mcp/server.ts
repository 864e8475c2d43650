import { BadRequest, NotAuthenticated } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { Application } from '../declarations.js'
import { errorBody, originalErrorOf, shapeError } from '../hooks/errors.js'
import { requestLog } from '../logger.js'
import { asSent, assistantOf, enabledTools, isToolKey } from '../services/reservations/ai-assistant-tools/tools.js'
import { ERASING_TOOLS, MCP_TOOLS } from './tools.js'

/** Who an MCP connection acts as, and which tools it may call. */
export interface McpSession {
  /** The params of every tool call: the key's caller, authenticated, not yet counted by the rate limit. */
  params: Params
  tools: string[]
}

/**
 * Opens a session for an API key (401 without a valid one). With an assistant id (the
 * X-Assistant-Id header), the reservation tools are those the assistant's internal_tools
 * enables; the CRM tools stay available to the key.
 */
export async function openSession(app: Application, apiKey: string | undefined, assistantId?: string): Promise<McpSession> {
  if (!apiKey) throw new NotAuthenticated('Invalid API key')
  const { accessToken: _token, ...result } = await app.service('authentication').authenticate({ strategy: 'api-key', apiKey }, {}, 'api-key')
  const params: Params = { provider: 'mcp', ...result, authenticated: true, authenticatedBeforeBody: true }
  const names = Object.keys(MCP_TOOLS).filter((name) => !ERASING_TOOLS.has(name) || app.get('mcpAllowErase'))
  if (assistantId === undefined) return { params, tools: names }
  if (!/^[1-9]\d{0,15}$/.test(assistantId)) {
    throw new BadRequest('Validation failed', { errors: { 'x-assistant-id': 'must be the id of an ai assistant' } })
  }
  const assistant = await assistantOf(app, result.caller.apiKeyOrganizationId, Number(assistantId), 'x-assistant-id')
  const enabled: string[] = enabledTools(assistant)
  return { params, tools: names.filter((name) => !isToolKey(name) || enabled.includes(name)) }
}

const text = (value: unknown) => [{ type: 'text' as const, text: JSON.stringify(value) }]

/**
 * Runs a tool as the session's caller through its endpoint's service method, so that
 * authentication, the rate limit, tenant scope, validation and hooks apply as over HTTP. Every
 * error comes back as a tool error carrying the API's error body (field messages included).
 */
async function callTool(app: Application, session: McpSession, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  if (!(name in MCP_TOOLS)) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`)
  if (!session.tools.includes(name)) {
    const refused = new BadRequest('Tool not enabled', { errors: { tool: 'is not enabled for this assistant' } })
    return { isError: true, content: text(errorBody(refused)) }
  }
  try {
    const result = asSent(await MCP_TOOLS[name].run(app, args, { ...session.params }))
    const structured = result && typeof result === 'object' && !Array.isArray(result) ? (result as Record<string, unknown>) : undefined
    return { content: text(result), ...(structured ? { structuredContent: structured } : {}) }
  } catch (raw) {
    const error = shapeError(raw)
    if (error.code >= 500) requestLog(app.get('logger'), session.params.requestId).error({ err: originalErrorOf(error), tool: name }, 'MCP tool call failed')
    return { isError: true, content: text(errorBody(error)) }
  }
}

/** An MCP server offering the session's tools, with each tool's JSON Schema as derived from its service's TypeBox schema. */
export function mcpServer(app: Application, session: McpSession) {
  // The low-level Server: the tools' schemas are JSON Schema already (TypeBox), while
  // McpServer.registerTool takes Zod schemas only.
  const server = new Server({ name: 'crm-api', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: session.tools.map((name) => ({
      name,
      description: `${MCP_TOOLS[name].description} (${MCP_TOOLS[name].endpoint})`,
      inputSchema: JSON.parse(JSON.stringify(MCP_TOOLS[name].arguments))
    }))
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request) =>
    callTool(app, session, request.params.name, request.params.arguments)
  )
  return server
}
