import { authenticate } from '@feathersjs/authentication'
import feathersCore from '@feathersjs/feathers'
import { Forbidden, NotAuthenticated } from '@feathersjs/errors'
import type { Context } from 'koa'
import type { Application, HookContext, NextFunction } from '../declarations.js'
import { limitApiKeyRequests } from './rate-limit.js'

declare module '@feathersjs/feathers' {
  interface Params {
    /** Authenticated by authenticateBeforeBody in front of the service; not yet rate-limited. */
    authenticatedBeforeBody?: boolean
  }
}

const STRATEGIES = ['jwt', 'api-key'] as const
// Named, the authentication service is looked up directly; unnamed, Feathers finds it on every
// call by walking every registered service.
const byTokenOrKey = authenticate({ service: 'authentication', strategies: [...STRATEGIES] })

/**
 * Every external call must carry a bearer JWT or an x-api-key. A request with neither gets the
 * spec's 401 for a missing key; internal calls pass through (the tenant hook still needs a caller).
 * An authenticated API-key request is then counted against its organization's rate limit.
 */
export const authenticated = async (context: HookContext, next: NextFunction) => {
  const { provider, authentication, caller, authenticated: onBehalfOfAuthenticatedCall, authenticatedBeforeBody } = context.params
  if (provider && !authentication && !caller) throw new NotAuthenticated('Invalid API key')
  if (authenticatedBeforeBody) {
    // Already authenticated by the Koa middleware of this request: counted here, once.
    refuseWritesOfReadOnlyKeys(context)
    await limitApiKeyRequests(context)
    return next()
  }
  return byTokenOrKey(context, async () => {
    refuseWritesOfReadOnlyKeys(context)
    // Counted where the key is checked, once per request: calls a service makes on behalf of
    // an already authenticated request (params.authenticated) are not counted again.
    if (!onBehalfOfAuthenticatedCall) await limitApiKeyRequests(context)
    return next()
  })
}

/** The methods of every service that only read; a tenant resource adds its reading custom methods (readMethods). */
export const READ_METHODS = ['find', 'get']

/** Whether the call only reads: find, get, or a reading custom method its resource declares (readMethods). */
export const isReadCall = (context: HookContext) =>
  (((feathersCore.getServiceOptions(context.self) as any)?.readMethods ?? READ_METHODS) as string[]).includes(context.method)

/** An API key with the scope 'read' only: any other method is a 403 before anything is read or written. */
function refuseWritesOfReadOnlyKeys(context: HookContext) {
  if (!context.params.caller?.apiKeyReadOnly) return
  if (!isReadCall(context)) {
    throw new Forbidden("This API key may only read (its scopes are ['read']): create a key with the scope 'write' to change data")
  }
}

/**
 * For Koa middleware that must know the caller before reading the body (multipart uploads
 * stream to disk): the same strategies and the same 401 as the `authenticated` hook. The result
 * goes into the call's params, so the hook does not authenticate again; it still counts the
 * API-key rate limit, once.
 */
export async function authenticateBeforeBody(app: Application, ctx: Context) {
  const authentication = ctx.feathers?.authentication
  if (!authentication) throw new NotAuthenticated('Invalid API key')
  const { accessToken: _token, ...result } = await app.service('authentication').authenticate(authentication, {}, ...STRATEGIES)
  ctx.feathers = { ...ctx.feathers, ...result, authenticated: true, authenticatedBeforeBody: true }
}
