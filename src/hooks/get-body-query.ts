import qs from 'qs'
import { BadRequest } from '@feathersjs/errors'
import type { Context, Next } from 'koa'

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  !!value && typeof value === 'object' && !Array.isArray(value)

/**
 * The spec sends list filters as a JSON body {query: {...}}, even with GET. This middleware
 * merges them with the query string (parsed with qs, so $sort[name]=1 nests) into the one
 * params.query that the services validate; a body filter wins over the same key in the URL.
 */
export const getBodyQuery = () => (ctx: Context, next: Next) => {
  const fromUrl = ctx.querystring ? qs.parse(ctx.querystring, { depth: 5, arrayLimit: 500 }) : {}
  let query: Record<string, unknown> = fromUrl as Record<string, unknown>
  if (ctx.method === 'GET' || ctx.method === 'DELETE') {
    const body = (ctx.request as any).body
    if (isPlainObject(body) && Object.keys(body).length > 0) {
      if (!isPlainObject(body.query) || Object.keys(body).some((key) => key !== 'query')) {
        throw new BadRequest('A GET body must have the form {"query": {...filters}}')
      }
      query = { ...query, ...body.query }
    }
  }
  ctx.feathers = { ...ctx.feathers, query }
  return next()
}
