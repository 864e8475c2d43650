import { BadRequest } from '@feathersjs/errors'
import type { HookContext } from '../declarations.js'

const NUL = '\u0000'
const MESSAGE = 'must not contain a NUL character'
// A body or query nests far less than this; deeper input is refused by the validators anyway.
const MAX_DEPTH = 32

const join = (path: string, key: string) => (path ? `${path}.${key}` : key)

/**
 * The dotted paths of every string (and every object key) under `value` that holds a NUL
 * character. Postgres text cannot store one (22021), so such input is refused before any hook
 * or query sees it.
 */
export function nulPaths(value: unknown, path: string, found: string[] = [], depth = 0): string[] {
  if (typeof value === 'string') {
    if (value.includes(NUL)) found.push(path || 'body')
    return found
  }
  if (!value || typeof value !== 'object' || depth > MAX_DEPTH) return found
  if (Array.isArray(value)) {
    value.forEach((item, index) => nulPaths(item, join(path, String(index)), found, depth + 1))
    return found
  }
  for (const key of Object.keys(value)) {
    if (key.includes(NUL)) found.push(join(path, key.replaceAll(NUL, '\\u0000')))
    else nulPaths((value as Record<string, unknown>)[key], join(path, key), found, depth + 1)
  }
  return found
}

/**
 * App-level before hook, ahead of every service's own hooks, for every external call whatever its
 * transport (REST, Socket.io, MCP): a NUL character anywhere in the data or the query (values or
 * keys) is a 400 naming the field, e.g. errors['custom_fields_by_name.Score'] or
 * errors['query.name']. A REST GET body's filters are already in the query (getBodyQuery).
 */
export const rejectNulCharacters = async (context: HookContext) => {
  if (!context.params.provider) return
  const paths = [...nulPaths(context.data, ''), ...nulPaths(context.params.query, 'query')]
  if (paths.length) {
    throw new BadRequest('Validation failed', { errors: Object.fromEntries(paths.map((path) => [path, MESSAGE])) })
  }
}
