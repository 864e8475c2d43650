import { Forbidden } from '@feathersjs/errors'
import type { HookContext, NextFunction } from '../declarations.js'
import { FORBIDDEN_MESSAGE } from './tenant-scope.js'

/**
 * An API key acts inside its organization's data only. Whatever reaches beyond it is refused
 * to API-key callers: the account of the key's user (its password and e-mail open every
 * organization of that user), creating and changing organizations, joining other organizations
 * through invitations, and managing API keys. An around hook, placed right after authentication.
 */
export const refuseApiKeyCallers = async (context: HookContext, next: NextFunction) => {
  if (context.params.caller?.apiKeyOrganizationId !== undefined) throw new Forbidden(FORBIDDEN_MESSAGE)
  return next()
}
