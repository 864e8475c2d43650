import { authenticate } from '@feathersjs/authentication'
import { NotAuthenticated } from '@feathersjs/errors'
import type { HookContext, NextFunction } from '../declarations.js'
import { limitApiKeyRequests } from './rate-limit.js'

const byTokenOrKey = authenticate('jwt', 'api-key')

/**
 * Every external call must carry a bearer JWT or an x-api-key. A request with neither gets the
 * spec's 401 for a missing key; internal calls pass through (the tenant hook still needs a caller).
 * An authenticated API-key request is then counted against its organization's rate limit.
 */
export const authenticated = async (context: HookContext, next: NextFunction) => {
  const { provider, authentication, caller, authenticated: onBehalfOfAuthenticatedCall } = context.params
  if (provider && !authentication && !caller) throw new NotAuthenticated('Invalid API key')
  return byTokenOrKey(context, async () => {
    // Counted where the key is checked, once per request: calls a service makes on behalf of
    // an already authenticated request (params.authenticated) are not counted again.
    if (!onBehalfOfAuthenticatedCall) await limitApiKeyRequests(context)
    return next()
  })
}
