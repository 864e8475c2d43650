import { authenticate } from '@feathersjs/authentication'
import { NotAuthenticated } from '@feathersjs/errors'
import type { HookContext, NextFunction } from '../declarations.js'

const byTokenOrKey = authenticate('jwt', 'api-key')

/**
 * Every external call must carry a bearer JWT or an x-api-key. A request with neither gets the
 * spec's 401 for a missing key; internal calls pass through (the tenant hook still needs a caller).
 */
export const authenticated = async (context: HookContext, next: NextFunction) => {
  const { provider, authentication, caller } = context.params
  if (provider && !authentication && !caller) throw new NotAuthenticated('Invalid API key')
  return byTokenOrKey(context, next)
}
