import { FeathersError } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import type { Application } from './declarations.js'
import { StartupError } from './startup.js'

/**
 * The account steps of README's walk-through (an organization, its API key) taken in-process by
 * the commands that set up a database (`npm run seed`, `npm run create-user`): each call goes
 * through the services with the caller HTTP would give it, so validation and hooks apply.
 */

/** The params of a call by this user with a fresh JWT: their memberships as they are now. */
export async function asUser(app: Application, userId: number): Promise<Params> {
  const authentication = app.service('authentication')
  const accessToken = await authentication.createAccessToken({}, { subject: String(userId) })
  const { accessToken: _token, ...result } = await authentication.authenticate({ strategy: 'jwt', accessToken }, {}, 'jwt')
  return { ...result, authenticated: true } as Params
}

/** The params of a call made with this API key. */
export async function asApiKey(app: Application, apiKey: string): Promise<Params> {
  const { accessToken: _token, ...result } = await app.service('authentication').authenticate({ strategy: 'api-key', apiKey }, {}, 'api-key')
  return { ...result, authenticated: true } as Params
}

/** A new organization owned by the user. */
export const createOwnedOrganization = async (app: Application, userId: number, name: string) =>
  app.service('organizations').create({ name } as any, await asUser(app, userId))

/** A new API key of the user in one of their organizations: the plain key is in the answer, this once. */
export const createApiKey = async (app: Application, userId: number, organizationId: number, name: string) =>
  (app.service('api-keys') as any).create({ organization_id: organizationId, name }, await asUser(app, userId)) as Promise<{ id: number; key: string }>

/** A refusal of the services (a taken or malformed address, a short password) as the one line a command prints; other errors as they are. */
export function refusalAsOneLine(error: unknown) {
  if (!(error instanceof FeathersError) || error.code >= 500) return error
  const fields = Object.entries(error.errors ?? error.data?.errors ?? {}).map(([field, message]) => `${field} ${message}`)
  return new StartupError(fields.length ? `${error.message}: ${fields.join('; ')}` : error.message)
}
