import { BadRequest } from '@feathersjs/errors'
import feathersCore from '@feathersjs/feathers'
import { parse } from 'lossless-json'
import type { Context, Next } from 'koa'
import type { Application } from '../declarations.js'

/** The media types read as JSON bodies (the body parser's list too). */
export const JSON_TYPES = ['application/json', '+json']

const hasBody = (ctx: Context) => (ctx.request.length ?? 0) > 0 || ctx.get('Transfer-Encoding') !== ''

/**
 * Koa middleware before the body parser: a body sent to a service is JSON. The parser leaves a
 * body of any other type (or of none) unread, so it would reach the service as no body at all and
 * fail as "first_name is required"; instead it is a 400 naming the header to send. An upload takes
 * the type its service declares (docs.createContentType); a route that is not a service (a signed
 * file upload, /mcp) reads its own body.
 */
export const requireJsonBodies = (app: Application) => (ctx: Context, next: Next) => {
  if (!hasBody(ctx) || ctx.is(JSON_TYPES)) return next()
  const found = app.lookup(ctx.path.replace(/^\/+/, ''))
  if (!found) return next()
  const declared: string | undefined = (feathersCore.getServiceOptions(found.service) as any)?.docs?.createContentType
  if (declared && ctx.is(declared)) return next()
  const sent = ctx.get('Content-Type')
  throw new BadRequest(
    `Invalid request body: send it as JSON with the header Content-Type: application/json${declared ? ` (or ${declared} for an upload)` : ''}; ` +
    (sent ? `it came as ${sent.split(';')[0].trim()}` : 'it came without a Content-Type')
  )
}

/**
 * The message of a body that is not valid JSON: what is wrong and where, as a position in the
 * text and its line and column (JSON.parse's own message names no position for some mistakes;
 * lossless-json's always does).
 */
export function invalidJsonMessage(text: string): string {
  try {
    parse(text)
  } catch (error: any) {
    const found = /^(.*) at position (\d+)$/.exec(String(error?.message ?? ''))
    if (found) {
      const position = Number(found[2])
      const before = text.slice(0, position).split('\n')
      return `Invalid JSON in the request body at position ${position} (line ${before.length}, column ${before[before.length - 1].length + 1}): ${found[1]}`
    }
  }
  return 'Invalid JSON in the request body'
}
