/**
 * Answers Postgres wrote in the API's shape (read-model.ts). A REST request's own read gets the
 * text as it is (RenderedAnswer, written by the transport's formatter without a parse and a
 * stringify); any other caller gets the parsed object.
 */
export class RenderedAnswer {
  constructor(readonly text: string) {}

  toJSON() {
    return JSON.parse(this.text)
  }
}

type KoaContext = { body?: unknown; type?: string; hook?: unknown; feathers?: Record<string, unknown> }

/**
 * The HTTP request of a REST call, in its params: an answer may go out as text only to the call
 * the request made itself (the Koa transport keeps its hook context in ctx.hook), never to a call
 * a hook or a service made with a copy of those params, which expects objects.
 */
export class RestRequest {
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

/** Koa middleware: every REST call carries its request (params.restRequest). */
export const restRequests = (ctx: KoaContext, next: () => Promise<unknown>) => {
  ctx.feathers = { ...ctx.feathers, restRequest: new RestRequest(ctx) }
  return next()
}

declare module '@feathersjs/feathers' {
  interface Params {
    restRequest?: RestRequest
  }
}

/** The REST transport's formatter: a rendered answer is sent as the text Postgres wrote. */
export const renderedFormatter = (ctx: KoaContext) => {
  if (ctx.body instanceof RenderedAnswer) {
    ctx.type = 'application/json'
    ctx.body = ctx.body.text
  }
}
