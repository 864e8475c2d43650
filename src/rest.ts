import { Readable } from 'node:stream'
import feathers from '@feathersjs/feathers'
import type { Application } from './declarations.js'
import { RenderedAnswer } from './engine/rendered-answer.js'
import type { CallOwner } from './engine/rendered-answer.js'
import { CsvAnswer } from './engine/csv-export.js'

/**
 * What the REST transport adds to Feathers' Koa: the request each call belongs to, the answers
 * Postgres wrote sent as their text, and the PATCH form of the batch methods.
 */

type KoaContext = {
  body?: unknown
  type?: string
  hook?: unknown
  method?: string
  feathers?: Record<string, unknown>
  accepts?: (...types: string[]) => string | false
  set?: (field: string, value: string) => void
}

/**
 * The HTTP request of a REST call, in its params: an answer may go out as text only to the call
 * the request made itself (the Koa transport keeps its hook context in ctx.hook), never to a call
 * a hook or a service made with a copy of those params, which expects objects.
 */
class RestRequest implements CallOwner {
  readonly #ctx: KoaContext
  constructor(ctx: KoaContext) {
    this.#ctx = ctx
  }

  owns(context: object) {
    return this.#ctx.hook === context
  }

  toJSON() {
    return {}
  }
}

/**
 * Koa middleware: every REST call carries its request (params.restRequest); a GET that prefers
 * text/csv to JSON (Accept) carries it as params.csv too, and a list answers it as CSV.
 */
export const restRequests = (ctx: KoaContext, next: () => Promise<unknown>) => {
  const request = new RestRequest(ctx)
  const csv = ctx.method === 'GET' && ctx.accepts?.('application/json', 'text/csv') === 'text/csv'
  ctx.feathers = { ...ctx.feathers, restRequest: request, ...(csv ? { csv: request } : {}) }
  return next()
}

/**
 * A JSON answer too large to hold at once (a person's data export), in chunks of its text: sent
 * as a stream to the REST request that made the call. Never kept with an Idempotency-Key.
 */
export class StreamedAnswer {
  constructor(readonly chunks: AsyncIterable<string>) {}
}

/** The text of a streamed answer, whole: for callers other than a REST request (sockets, MCP). */
export async function wholeText(chunks: AsyncIterable<string>) {
  let text = ''
  for await (const chunk of chunks) text += chunk
  return text
}

/** The REST transport's formatter: a rendered answer is sent as the text Postgres wrote, a streamed one (JSON or CSV) as it comes. */
export const renderedFormatter = (ctx: KoaContext) => {
  if (ctx.body instanceof CsvAnswer) {
    ctx.type = 'text/csv; charset=utf-8'
    ctx.set?.('Content-Disposition', `attachment; filename="${ctx.body.fileName}"`)
    ctx.body = Readable.from(ctx.body.chunks)
  } else if (ctx.body instanceof RenderedAnswer) {
    ctx.type = 'application/json'
    ctx.body = ctx.body.text
  } else if (ctx.body instanceof StreamedAnswer) {
    ctx.type = 'application/json'
    ctx.body = Readable.from(ctx.body.chunks)
  }
}

/**
 * Koa middleware: PATCH /<path> with X-Service-Method batch-update or batch-delete reaches the
 * custom method of a resource that has it, as the POST form does.
 */
export const patchToBatchMethod = (app: Application) => async (ctx: any, next: () => Promise<unknown>) => {
  const method = ctx.request.headers['x-service-method']
  if (ctx.method === 'PATCH' && (method === 'batch-update' || method === 'batch-delete')) {
    const route = app.lookup(ctx.path)
    if (route && route.params.__id === undefined && feathers.getServiceOptions(route.service)?.methods?.includes(method)) ctx.request.method = 'POST'
  }
  return next()
}
