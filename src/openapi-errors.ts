/**
 * What every operation of the OpenAPI document shares: its error answers and the rate-limit
 * headers, and the two helpers that write a JSON body and a reference to a component.
 */

export const json = (schema: unknown, example?: unknown) => ({ content: { 'application/json': { schema, ...(example === undefined ? {} : { example }) } } })
export const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` })

const WRITES = new Set(['post', 'patch', 'put', 'delete'])

export const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': { description: 'Requests allowed per window (per organization for an API key; per client address on public routes)', schema: { type: 'integer' }, example: 1000 },
  'RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer' }, example: 998 },
  'RateLimit-Reset': { description: 'Seconds until a request is allowed again', schema: { type: 'integer' }, example: 3 },
  'RateLimit-Policy': { description: '<limit>;w=<window seconds>', schema: { type: 'string' }, example: '1000;w=3600' }
}
export const rateLimitHeaderRefs = Object.fromEntries(Object.keys(RATE_LIMIT_HEADERS).map((name) => [name, ref('headers', name)]))

export const errorExample = (name: string, code: number, className: string, message: string, extra: Record<string, unknown> = {}) =>
  ({ name, message, code, className, ...extra })

export const ERROR_RESPONSES: Record<number, { name: string; body: Record<string, unknown> }> = {
  400: {
    name: 'BadRequest',
    body: {
      description: 'Invalid request: errors maps each field to what is wrong with it',
      ...json(ref('schemas', 'Error'), errorExample('BadRequest', 400, 'bad-request', 'Validation failed', { errors: { email: 'must be an e-mail address', first_name: 'is required' } }))
    }
  },
  401: {
    name: 'NotAuthenticated',
    body: { description: 'Missing or invalid API key or token', ...json(ref('schemas', 'Error'), errorExample('NotAuthenticated', 401, 'not-authenticated', 'Invalid API key')) }
  },
  403: {
    name: 'Forbidden',
    body: {
      description: 'Not permitted: another organization than the API key\'s, or a role without this right',
      ...json(ref('schemas', 'Error'), errorExample('Forbidden', 403, 'forbidden', 'You do not have permission to view this resource. Please contact your organization administrator.'))
    }
  },
  404: {
    name: 'NotFound',
    body: { description: 'No such record in your organizations', ...json(ref('schemas', 'Error'), errorExample('NotFound', 404, 'not-found', "No record found for id '42'")) }
  },
  409: {
    name: 'Conflict',
    body: { description: 'The change conflicts with the current state (a unique value taken, a time no longer free)', ...json(ref('schemas', 'Error'), errorExample('Conflict', 409, 'conflict', 'Conflict', { errors: { email: 'is already taken' } })) }
  },
  429: {
    name: 'TooManyRequests',
    body: {
      description: 'Rate limit exceeded: wait Retry-After seconds',
      headers: { ...rateLimitHeaderRefs, 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' }, example: 3 } },
      ...json(ref('schemas', 'Error'), errorExample('TooManyRequests', 429, 'too-many-requests', 'Rate limit exceeded', { data: { limit: 1000, current: 1001, window: 3600, retryAfter: 3 } }))
    }
  },
  503: {
    name: 'Unavailable',
    body: {
      description: 'A connection the request needed was lost (a database failover or restart): send it again after Retry-After seconds (a read has already been tried twice)',
      headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' }, example: 1 } },
      ...json(ref('schemas', 'Error'), errorExample('Unavailable', 503, 'unavailable', 'The service lost a connection it needed; send the request again', { data: { retryAfter: 1 } }))
    }
  }
}

/** The error answers an operation can give: by its credentials, whether it names a record, and whether it writes. */
export function errorCodes(pathKey: string, method: string, operation: any): number[] {
  const isPublic = Array.isArray(operation.security) && operation.security.length === 0
  const namesRecord = pathKey.includes('{')
  return [400, ...(isPublic ? [] : [401, 403]), ...(namesRecord ? [404] : []), ...(WRITES.has(method) ? [409] : []), 429, 503]
}
