import { BadRequest, Forbidden, NotAuthenticated, NotFound } from '@feathersjs/errors'
import type { Caller, HookContext, Role } from '../declarations.js'

export const FORBIDDEN_MESSAGE =
  'You do not have permission to view this resource. Please contact your organization administrator.'

/**
 * The spec's 403 for a named organization the caller may not act in, followed by what to do: an
 * API key's holder learns which organization the key belongs to (it is theirs), a member only
 * where to find their own organizations, never anything about the one they named.
 */
const outsideOrganizationsError = (caller: Caller) =>
  new Forbidden(
    caller.apiKeyOrganizationId !== undefined
      ? `${FORBIDDEN_MESSAGE} This API key belongs to organization ${caller.apiKeyOrganizationId}: leave organization_id out or name that one.`
      : `${FORBIDDEN_MESSAGE} Name one of the organizations you belong to (GET /organizations lists them).`
  )

const ID_METHODS = new Set(['get', 'patch', 'remove', 'update'])

export interface TenantScopeOptions {
  /** Roles allowed per method ('all' for every method); absent means every member. */
  roles?: Partial<Record<string, Role[]>>
}

const rolesFor = (options: TenantScopeOptions, method: string) => options.roles?.[method] ?? options.roles?.all

const parseOrganizationId = (value: unknown): number | undefined => {
  if (value === undefined || value === null || value === '') return undefined
  const id = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) {
    throw new BadRequest('Validation failed', { errors: { organization_id: 'must be an organization id' } })
  }
  return id
}

/** The organizations a caller may act in for a method: one for an API key, the memberships for a JWT. */
export function accessibleOrganizations(caller: Caller, roles?: Role[]): number[] {
  const all = caller.apiKeyOrganizationId !== undefined ? [caller.apiKeyOrganizationId] : [...caller.roles.keys()]
  return roles ? all.filter((id) => roles.includes(caller.roles.get(id)!)) : all
}

/**
 * Resolves the one organization a collection call (find, create, custom methods) acts in.
 * API key: defaults to the key's organization, any other → 403. JWT: required, must be a membership.
 */
export function resolveOrganization(caller: Caller, requested: unknown, roles?: Role[]): number {
  const id = parseOrganizationId(requested)
  if (caller.apiKeyOrganizationId !== undefined) {
    if (id !== undefined && id !== caller.apiKeyOrganizationId) throw outsideOrganizationsError(caller)
  } else if (id === undefined) {
    throw new BadRequest('Validation failed', { errors: { organization_id: 'is required' } })
  }
  const organizationId = id ?? caller.apiKeyOrganizationId!
  const role = caller.roles.get(organizationId)
  if (!role) throw outsideOrganizationsError(caller)
  if (roles && !roles.includes(role)) throw new Forbidden(FORBIDDEN_MESSAGE)
  return organizationId
}

/**
 * The tenant rule, once for every tenant service. Collection calls are pinned to one
 * organization (query for find, body otherwise); calls by id are confined to the caller's
 * organizations so that anything else is a 404. A call with no caller is refused unless it
 * says explicitly that it is a system call.
 */
export const scopeToTenant = (options: TenantScopeOptions = {}) => async (context: HookContext) => {
  const { params, method } = context
  if (params.system) return context
  const caller = params.caller
  if (!caller) throw new NotAuthenticated('Invalid API key')
  const roles = rolesFor(options, method)
  const query = (params.query ??= {})

  if (ID_METHODS.has(method)) {
    params.query = { ...query, organization_id: organizationsOfIdCall(caller, query.organization_id, roles, context.id) }
    if (context.id !== null && context.id !== undefined && roles) {
      await guardRoleOnRecord(context, caller, roles)
    }
    return context
  }

  if (method === 'find') {
    params.query = { ...query, organization_id: resolveOrganization(caller, query.organization_id, roles) }
    return context
  }

  const data = (context.data ??= {}) as Record<string, unknown>
  if (Array.isArray(data)) {
    pinRecords(caller, data, roles)
    return context
  }
  data.organization_id = resolveOrganization(caller, data.organization_id, roles)
  return context
}

/** A batch of records is written in one organization: the one its records name (all alike), or the API key's. */
function pinRecords(caller: Caller, records: unknown[], roles: Role[] | undefined) {
  const objects = records.filter((record): record is Record<string, unknown> => Boolean(record) && typeof record === 'object' && !Array.isArray(record))
  const named = [...new Set(objects.map((record) => record.organization_id).filter((id) => id !== undefined && id !== null))]
  if (named.length > 1) throw new BadRequest('Validation failed', { errors: { organization_id: 'must be the same for every record of a batch' } })
  const organizationId = resolveOrganization(caller, named[0], roles)
  for (const record of objects) record.organization_id = organizationId
}

/**
 * The organizations a call by id may touch. A named organization_id pins the call to that one
 * organization (a record elsewhere is then simply not found); otherwise every organization of
 * the caller. A call on many records at once (a multi patch) needs the method's role in each
 * organization it touches: a named organization without it is a 403, and unnamed ones are
 * narrowed to those where the caller has it.
 */
function organizationsOfIdCall(caller: Caller, requested: unknown, roles: Role[] | undefined, id: unknown) {
  const many = id === null || id === undefined
  if (requested !== undefined) return resolveOrganization(caller, requested, many ? roles : undefined)
  const allowed = accessibleOrganizations(caller, many ? roles : undefined)
  if (allowed.length === 0) throw new Forbidden(FORBIDDEN_MESSAGE)
  return { $in: allowed }
}

/** Loads the record (404 outside the caller's organizations) and checks the caller's role in its organization. */
async function guardRoleOnRecord(context: HookContext, caller: Caller, roles: Role[]) {
  const before = await loadBefore(context)
  const role = caller.roles.get(before.organization_id)
  if (!role || !roles.includes(role)) throw new Forbidden(FORBIDDEN_MESSAGE)
}

/**
 * The live record a patch or remove is about to change, scoped like the call itself;
 * loaded once per call and kept in params.before for the hooks that need it.
 */
export async function loadBefore(context: HookContext): Promise<Record<string, any>> {
  if (context.params.before) return context.params.before
  const { id, service, params } = context
  const { organization_id } = params.query ?? {}
  const before = await (service as any).storedRow(id, { ...params, query: { organization_id } }).catch((error: any) => {
    if (error?.code === 404) throw new NotFound(`No record found for id '${id}'`)
    throw error
  })
  params.before = before
  return before
}


/** The organization a write targets: the scoped body on create, the stored record on patch. */
export async function targetOrganization(context: HookContext): Promise<number> {
  if (context.method === 'patch' && context.id !== null && context.id !== undefined) {
    return (await loadBefore(context)).organization_id
  }
  const data = context.data as Record<string, unknown>
  return data.organization_id as number
}
