import { BadRequest } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import type { Context, Next } from 'koa'
import { isRecordId } from '../schemas.js'

declare module '@feathersjs/feathers' {
  interface Params {
    /** The :id of POST /<path>/:id with X-Service-Method (Feathers hands custom methods only data and params). */
    pathId?: string
  }
}

/** Koa middleware of services whose custom methods act on one record: the path's id goes to params.pathId. */
export const customMethodId = async (ctx: Context, next: Next) => {
  const id = (ctx as any).lookup?.params?.__id
  if (id !== undefined) ctx.feathers = { ...ctx.feathers, pathId: String(id) }
  return next()
}

/**
 * The record a custom method acts on: POST /<path>/<id> over REST. A socket call has no path: it
 * names the record in its data, {id}. Both given, they must agree.
 */
export function idOfPath(params: Params, data?: { id?: unknown }): number {
  const inData = data?.id
  if (params.pathId === undefined && inData !== undefined) return Number(inData)
  if (!params.pathId || !isRecordId(params.pathId)) {
    throw new BadRequest('Validation failed', { errors: { id: 'is required: in the path, POST /<resource>/<id> with X-Service-Method (over Socket.io: id in the data)' } })
  }
  if (inData !== undefined && Number(inData) !== Number(params.pathId)) {
    throw new BadRequest('Validation failed', { errors: { id: 'differs from the id in the path' } })
  }
  return Number(params.pathId)
}
