import { BadRequest } from '@feathersjs/errors'
import type { HookContext } from '../declarations.js'

// The methods whose arguments carry no body.
const WITHOUT_BODY = new Set(['find', 'get', 'remove'])

const isPlainObject = (value: unknown) => value !== null && typeof value === 'object' && !Array.isArray(value)

/** Whether the service takes an array on create: an adapter declaring it with the `multi` option (batch writes). */
const takesArraysOnCreate = (context: HookContext) => {
  const service = context.self as { allowsMulti?: (method: string, params: unknown) => boolean }
  return typeof service.allowsMulti === 'function' && service.allowsMulti('create', context.params)
}

/**
 * App-level before hook, ahead of every service's own hooks (credentials included): a write
 * (create, patch, update or a custom method) takes one JSON object; an array is a 400 unless
 * the service takes batches on create. Every service gets it, the tenant resources and the
 * others alike (accounts, organizations, the login, the public routes), internal calls too.
 * A request without any body is left to the service (a cancel needs none; a create's
 * validation asks for its fields).
 */
export const oneObjectPerWrite = async (context: HookContext) => {
  if (WITHOUT_BODY.has(context.method) || context.data === undefined || isPlainObject(context.data)) return
  if (context.method === 'create' && Array.isArray(context.data) && takesArraysOnCreate(context)) return
  throw new BadRequest(
    takesArraysOnCreate(context) ? 'The body must be one JSON object, or an array of records on create' : 'The body must be one JSON object: send one record at a time'
  )
}
