/**
 * POST /mcp in the OpenAPI document. Its answers are JSON-RPC 2.0 messages: what the MCP
 * transport refuses (a body that is no JSON-RPC message, an Accept, Content-Type or protocol
 * version it cannot serve) is a JSON-RPC error object with an HTTP status, and a failed method is
 * a JSON-RPC error in a 200 (a batch gets an array of answers). Only what is refused before the
 * transport (the body's JSON or size, the API key, X-Assistant-Id, a lost database connection)
 * has the API's error body.
 */

const schema = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const jsonRpc = (name: string, example: unknown) => ({ content: { 'application/json': { schema: schema(name), example } } })
const apiError = (example: Record<string, unknown>) => ({ content: { 'application/json': { schema: schema('Error'), example } } })
const transportError = (code: number, message: string) => ({ jsonrpc: '2.0', error: { code, message }, id: null })

/** The JSON-RPC shapes of /mcp's answers, for components.schemas. */
export const JSON_RPC_SCHEMAS = {
  JsonRpcError: {
    type: 'object',
    required: ['jsonrpc', 'error', 'id'],
    description: 'A JSON-RPC 2.0 error: -32700 parse error (no JSON-RPC message), -32600 invalid request, -32601 unknown method, -32602 invalid params (an unknown tool), -32603 internal error, -32000 refused by the transport (Accept, Content-Type)',
    properties: {
      jsonrpc: { type: 'string', enum: ['2.0'] },
      id: { type: ['integer', 'string', 'null'], description: 'the request\'s id; null when the request could not be read' },
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} }
      }
    }
  },
  JsonRpcResult: {
    type: 'object',
    required: ['jsonrpc', 'id', 'result'],
    properties: { jsonrpc: { type: 'string', enum: ['2.0'] }, id: { type: ['integer', 'string'] }, result: { type: 'object' } }
  }
}

/** One answer of a JSON-RPC request. */
const ANSWER = [schema('JsonRpcResult'), schema('JsonRpcError')]

const TOOL_CALL = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_available_slots', arguments: { service_id: 1, date: '2026-01-15' } } }

/** POST /mcp: the MCP server (JSON-RPC 2.0 over the Streamable HTTP transport; see docs/integrations.md). */
export const MCP_PATH_DOCS = {
  post: {
    tags: ['mcp'],
    operationId: 'post_mcp',
    summary: 'Model Context Protocol: list and call the CRM and reservation tools (JSON-RPC 2.0)',
    description:
      'Streamable HTTP transport, stateless, JSON answers. The key goes in x-api-key or Authorization: Bearer <api key>; X-Assistant-Id limits the reservation tools to those the assistant enables. ' +
      'Send Content-Type: application/json and Accept: application/json, text/event-stream. GET and DELETE answer 405. See docs/integrations.md.',
    security: [{ apiKey: [] }, { bearer: [] }],
    parameters: [
      { name: 'X-Assistant-Id', in: 'header', required: false, schema: { type: 'integer', minimum: 1 }, description: "an AI assistant of the key's organization: its internal_tools decide the reservation tools offered" }
    ],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: { type: 'object', required: ['jsonrpc', 'method'], properties: { jsonrpc: { type: 'string', enum: ['2.0'] }, id: { type: ['integer', 'string'] }, method: { type: 'string' }, params: { type: 'object' } } },
          example: TOOL_CALL
        }
      }
    },
    responses: {
      200: {
        description: 'The JSON-RPC answer: a result, or a JSON-RPC error for an unknown method (-32601) or tool (-32602); for a batch of requests, an array of those answers. A failed tool call is a result with isError true and the API\'s error body as text',
        content: {
          'application/json': {
            schema: { oneOf: [...ANSWER, { type: 'array', minItems: 1, items: { oneOf: ANSWER } }] },
            example: { jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: '{"service_id":1,"date":"2026-01-15","timezone":"Europe/Madrid","data":[]}' }] } }
          }
        }
      },
      202: { description: 'A notification was accepted' },
      400: {
        description: 'A JSON-RPC error from the transport: the body is no JSON-RPC message (-32700), an invalid request or batch (-32600), or MCP-Protocol-Version names a version it does not speak (-32000). The API\'s error body when the body is no JSON at all, or X-Assistant-Id is not an assistant of the key\'s organization (errors["x-assistant-id"])',
        content: {
          'application/json': {
            schema: { oneOf: [schema('JsonRpcError'), schema('Error')] },
            example: transportError(-32700, 'Parse error: Invalid JSON-RPC message')
          }
        }
      },
      401: { description: 'Missing or invalid API key (a JWT is not accepted here)', ...apiError({ name: 'NotAuthenticated', message: 'Invalid API key', code: 401, className: 'not-authenticated' }) },
      406: { description: 'Accept does not list both application/json and text/event-stream (a JSON-RPC error)', ...jsonRpc('JsonRpcError', transportError(-32000, 'Not Acceptable: Client must accept both application/json and text/event-stream')) },
      413: { description: 'The body is larger than 1 MB', ...apiError({ name: 'PayloadTooLarge', message: 'Request body is too large', code: 413, className: 'payload-too-large' }) },
      415: { description: 'Content-Type is not application/json (a JSON-RPC error)', ...jsonRpc('JsonRpcError', transportError(-32000, 'Unsupported Media Type: Content-Type must be application/json')) },
      503: { $ref: '#/components/responses/Unavailable' }
    }
  }
}
