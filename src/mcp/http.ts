import { MethodNotAllowed } from '@feathersjs/errors'
import type { Context, Next } from 'koa'
import type { Application } from '../declarations.js'
import { API_KEY_PREFIX } from '../authentication.js'

// The MCP SDK loads with the first /mcp request, not at start: most instances never serve one.
let sdk: Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('./server.js')]> | undefined
const loadSdk = () => (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('./server.js')]))

export const MCP_PATH = '/mcp'

/** The API key of a request: x-api-key, or Authorization: Bearer <api key>. */
export function apiKeyOf(ctx: Context): string | undefined {
  const header = ctx.get('x-api-key')
  if (header) return header
  const bearer = /^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1]
  return bearer?.startsWith(API_KEY_PREFIX) ? bearer : undefined
}

/**
 * POST /mcp: the MCP server over the Streamable HTTP transport, stateless (each request
 * authenticates with its API key and gets its own server, so any instance can answer it) and
 * with JSON answers (no server-sent event stream: there is nothing to push). GET and DELETE,
 * which open a stream or end a session, have nothing to do here: 405.
 */
export const mcpEndpoint = (app: Application) => (ctx: Context, next: Next) => (ctx.path === MCP_PATH ? answerMcp(app, ctx) : next())

async function answerMcp(app: Application, ctx: Context) {
  if (ctx.method !== 'POST') {
    ctx.set('Allow', 'POST')
    throw new MethodNotAllowed('The MCP endpoint is stateless: send JSON-RPC messages with POST')
  }
  const [{ StreamableHTTPServerTransport }, { mcpServer, openSession }] = await loadSdk()
  const session = await openSession(app, apiKeyOf(ctx), ctx.get('x-assistant-id') || undefined)
  session.params.requestId = ctx.state.requestId
  const server = mcpServer(app, session)
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  await server.connect(transport)
  ctx.respond = false
  ctx.res.on('close', () => {
    void transport.close()
    void server.close()
  })
  await transport.handleRequest(ctx.req, ctx.res, (ctx.request as { body?: unknown }).body)
}
