import { BadRequest } from '@feathersjs/errors'
import feathersCore from '@feathersjs/feathers'
import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Resolver, Validator } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { TObject } from '@feathersjs/typebox'
import type { Application, HookContext, NextFunction, Role, ServiceTypes } from '../declarations.js'
import { READ_METHODS, authenticated } from '../hooks/authenticate.js'
import { refuseApiKeyCallers } from '../hooks/api-key-callers.js'
import { fieldError } from '../hooks/errors.js'
import { scopeToTenant } from '../hooks/tenant-scope.js'
import { verifyReferences } from '../hooks/references.js'
import type { GuardedWriter } from './write-guards.js'
import type { Reference } from '../hooks/references.js'
import { writeTransaction } from '../hooks/write-transaction.js'
import { announceCascade } from '../hooks/deferred-events.js'
import { eventTypeOf } from '../webhook-events.js'
import type { SoftDeleteCascade } from './record-service.js'
import { RECORD_ID_MESSAGE, RecordId, isRecordId } from '../schemas.js'
import { queryValidator, getValidator } from '../validators.js'
import { storeCustomFieldValues } from '../hooks/custom-field-values.js'
import type { CustomFieldEntity } from '../hooks/custom-field-values.js'
import { isReadParameter, readRequest } from './read-request.js'
import type { ReadDeclaration } from './read-request.js'
import type { Relation } from './read-model.js'
import type { CustomMethodDocs, ServiceDocs } from '../openapi.js'
import { BATCH_METHODS, batchHooks, batchRoles, batchValidators, emitBatchEvents } from './batch-writes.js'
import { batchMethodDocs } from '../openapi-schemas.js'
import type { BatchDeclaration } from './batch-writes.js'

export type ResourceHook = (context: HookContext<any>) => Promise<unknown> | unknown
type WriteMethod = 'create' | 'patch' | 'remove'
type Middleware = (ctx: any, next: () => Promise<unknown>) => Promise<unknown>

/** A custom method (POST /<path> with X-Service-Method: <name>). */
export interface CustomMethod {
  /** Validator of the body; the method's data. */
  data: Validator
  /** For the OpenAPI document: the body, the answer, and a summary in the resource's words. */
  docs: CustomMethodDocs
  /** Rules run after the body is validated and the organization pinned. */
  before?: ResourceHook[]
  /** The method only reads (a search): an API key with the scope 'read' may call it. */
  reads?: boolean
}

/** PATCH /<path> without an id: a change of many records at once (e.g. the bulk activity completion). */
export interface MultiPatch {
  data: Validator
  docs: CustomMethodDocs
  before?: ResourceHook[]
}

export interface TenantResourceOptions {
  path: keyof ServiceTypes & string
  service: any
  /** Every method of the service, the custom ones too (from <name>.shared.ts). */
  methods: readonly string[]
  description: string
  schemas: { result: TObject; data?: TObject; patch?: TObject; query: TObject }
  validators: { query: Validator; data?: Validator; patch?: Validator }
  /** The bodies of create and patch as stored: fields set by the service (the creator, defaults, normal forms). */
  resolvers?: {
    data?: Resolver<any, HookContext>
    patch?: Resolver<any, HookContext>
  }
  /** Properties of the result schema that never leave the service (a hash kept for lookups): no answer or event has them. */
  hidden?: readonly string[]
  /** Fields of the answers that are secrets shown once, never kept or forwarded (src/secret-fields.ts). */
  secretFields?: readonly string[]
  /** Ids a body may reference: each must be a live record (or member) of the same organization. */
  references?: Record<string, Reference>
  /**
   * A single create or patch checks its references, and a create without custom values that the
   * organization requires none, inside its own write statement (write-guards.ts) instead of a
   * query before it. Declare it only where the writes are RecordService's own (no create or
   * patch of the class writes by itself) and no rule relies on the references being checked.
   */
  checksInWrite?: boolean
  /** The roles a method needs ('all' for every method); absent: every member. */
  roles?: Partial<Record<string, Role[]>>
  /** Only people (a bearer JWT) use this resource, or these methods of it: API-key callers get 403. */
  refuseApiKeys?: boolean | string[]
  /**
   * Calls whose credential is a secret the request carries (an invitation token): they may come
   * without credentials, and `scope` replaces the tenant scope for them. `matches` may throw to
   * refuse a malformed one.
   */
  tokenCalls?: { matches: (context: HookContext) => boolean; scope: ResourceHook }
  /**
   * Properties of the result computed in SQL over the stored row (alias p), for every read: the
   * SQL itself, or a function of the app's configuration giving it.
   */
  computed?: Record<string, string | ((app: Application) => string)>
  /** Custom-field values written through the body (custom_fields_by_name or _by_key). */
  customFields?: { entity: CustomFieldEntity; by: 'name' | 'key' }
  /**
   * Joined reads. `list` is attached to every page, or only when the list flag `flag` (e.g.
   * fastJoinForCompanyList) is true; `record` is attached to every single read. The flag is a list
   * flag: on a call by id it is ignored (on get it attaches `list` when no `record` joins are declared).
   */
  joins?: { flag?: string; list?: Relation[]; record?: Relation[] }
  /** The resource's own rules, run after validation and references, before the data resolver. */
  rules?: Partial<Record<WriteMethod | 'find' | 'get', ResourceHook[]>>
  /** After hooks of the write methods and of custom methods (by name). */
  after?: Partial<Record<string, ResourceHook[]>>
  custom?: Record<string, CustomMethod>
  multiPatch?: MultiPatch
  /**
   * Batch writes (docs/bulk-and-sync.md): an array body on create, and the upsert, batch-update and
   * batch-delete custom methods (list BATCH_METHODS among the methods), with the keys upsert matches by.
   */
  batch?: BatchDeclaration
  /** Per method, the event types of records besides its answer's that it also changes (params.alsoChanged), e.g. a message moving its conversation. */
  alsoChanges?: Record<string, string[]>
  docs?: Pick<ServiceDocs, 'paths' | 'createContentType' | 'noun' | 'access' | 'csvRecord'>
  koa?: { before: Middleware[] }
  /** Events of the service besides created, patched and removed (e.g. contacts' erased): published to sockets like them. */
  events?: string[]
}

/** The query of every call by id (get, patch, remove, custom methods): the organization, nothing else. */
export const idQuerySchema = Type.Object({ organization_id: Type.Optional(RecordId) }, { $id: 'IdQuery', additionalProperties: false })
const idQueryValidator = getValidator(idQuerySchema, queryValidator)

/** The query keys of a list schema that are not fields of the record: flags such as fastJoinFor…List. */
export function listFlags(query: TObject, result: TObject): string[] {
  return Object.keys(query.properties).filter((key) => !key.startsWith('$') && !(key in result.properties))
}


/** The columns a query may filter on: the list schema's fields, and id and organization_id. */
function filterableColumns(query: TObject, flags: string[]) {
  const fields = Object.keys(query.properties).filter((key) => !key.startsWith('$') && !flags.includes(key))
  return new Set([...fields, 'id', 'organization_id'])
}

/**
 * The list query of find, the by-id query of every other method; a read's own parameters (the
 * list flag, $select, custom_fields_by_name.<name>) are kept aside for readRequest, since the
 * query schema does not describe them all. List flags on a call by id other than a get's are
 * ignored by declaration (removed before validation); any other list filter there is a 400.
 */
function validateQueries(options: TenantResourceOptions, flags: string[], declaration: ReadDeclaration): ResourceHook {
  const validateList = schemaHooks.validateQuery(options.validators.query)
  const validateById = schemaHooks.validateQuery(idQueryValidator)
  return async (context) => {
    const reading = context.method === 'find' || context.method === 'get'
    if (context.method !== 'find' && context.id !== null && context.id !== undefined && !isRecordId(context.id)) {
      // Before any SQL: a malformed id inside a write's transaction would abort it.
      throw fieldError('id', RECORD_ID_MESSAGE)
    }
    const aside: Record<string, unknown> = {}
    const filters: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(context.params.query ?? {})) {
      if (reading && isReadParameter(key, declaration, context.method)) aside[key] = value
      else if (context.method === 'find' || !flags.includes(key)) filters[key] = value
    }
    context.params.query = filters
    await (context.method === 'find' ? validateList : validateById)(context)
    context.params.query = { ...context.params.query, ...aside }
  }
}

const runAll = (hooks: ResourceHook[]) => async (context: HookContext) => {
  for (const hook of hooks) await hook(context)
}

/** The body of a write, validated and checked: validation, references, the resource's rules, then the data resolver. */
function writeChain(
  validator: Validator | undefined,
  references: ResourceHook | undefined,
  customFields: ResourceHook | undefined,
  rules: ResourceHook[] = [],
  resolver?: Resolver<any, HookContext>
): ResourceHook[] {
  return [
    ...(validator ? [schemaHooks.validateData(validator)] : []),
    ...(references ? [references] : []),
    ...rules,
    ...(customFields ? [customFields] : []),
    ...(resolver ? [schemaHooks.resolveData(resolver)] : [])
  ]
}

/**
 * Registers a tenant resource and owns its whole hook chain, in one order for every resource:
 *
 *   authentication (→ API keys refused, where declared) → the write transaction, when a write needs one
 *   (webhook events, Idempotency-Key answer, checks its statement could not make)
 *   → query validation (list query for find, by-id query otherwise; list flags stripped)
 *   → a write's body is one JSON object → tenant scope and role check → body validation → references → the resource's rules
 *   → custom-field values → data resolver → the service method → after rules.
 *
 * A resource file declares only what is special about it. The service's RecordService learns
 * the filterable columns, so that a key outside them is a 400 before it becomes SQL, and the
 * read model: every answer, read or written, is the record as Postgres writes it (read-model.ts).
 */
export function tenantResource(app: Application, options: TenantResourceOptions) {
  const { path, service, schemas } = options
  const flags = listFlags(schemas.query, schemas.result)
  if (service.options && 'Model' in service.options) {
    service.options.filterable = filterableColumns(schemas.query, flags)
  }
  if (service.options && 'Model' in service.options) {
    const { computed } = options
    service.options.secretFields = options.secretFields
    service.options.read = {
      schema: schemas.result,
      customFields: options.customFields,
      hidden: [...(options.hidden ?? []), ...(options.secretFields ?? [])],
      record: options.joins?.record,
      list: options.joins?.list,
      computed: computed && Object.fromEntries(Object.entries(computed).map(([name, sql]) => [name, typeof sql === 'function' ? sql(app) : sql]))
    }
  }
  const rules = options.rules ?? {}
  const inWrite = options.checksInWrite === true
  if (inWrite && (service as Partial<GuardedWriter>).guardsWrites !== true) throw new Error(`${path} declares checksInWrite, but its service does not write with guards`)
  const references = options.references ? verifyReferences(options.references, { inWrite }) : undefined
  const customFields = options.customFields ? storeCustomFieldValues(options.customFields.entity, options.customFields.by, { inWrite }) : undefined

  const reads = Object.entries(options.custom ?? {}).filter(([, method]) => method.reads).map(([name]) => name)
  const customDocs: Record<string, unknown> = {}
  for (const [name, method] of Object.entries(options.custom ?? {})) customDocs[name] = method.docs
  if (options.multiPatch) customDocs.multiPatch = options.multiPatch.docs
  const batch = options.batch ? batchValidators(options.batch) : undefined
  if (options.batch) {
    const missing = BATCH_METHODS.filter((method) => !options.methods.includes(method))
    if (missing.length) throw new Error(`${path} declares batch writes but does not list the methods ${missing.join(', ')}`)
    service.options.upsertKeys = options.batch.upsertKeys
    service.options.multi = ['create']
    Object.assign(customDocs, batchMethodDocs(path, Object.keys(options.batch.upsertKeys), schemas.data, schemas.patch))
  }

  app.use(path, service, {
    methods: [...options.methods],
    events: options.events ?? [],
    registeredAs: 'tenant-resource',
    refusesApiKeys: options.refuseApiKeys ?? false,
    // Who may list the records: their events reach the same connections (src/realtime-events.ts).
    readRoles: options.roles?.find ?? options.roles?.all,
    secretFields: options.secretFields,
    readMethods: [...READ_METHODS, ...reads],
    koa: options.koa,
    docs: {
      description: options.description,
      ...options.docs,
      customFieldFilters: options.customFields?.by === 'name',
      // A RecordService list answers CSV unless after rules run on its answer (read-request.ts).
      csvList: Boolean(service.options && 'Model' in service.options && !options.after?.find),
      schemas: { result: schemas.result, data: schemas.data, patch: schemas.patch, query: schemas.query, ...customDocs }
    }
  } as any)

  const chains = batch && {
    validators: options.validators,
    references: options.references,
    rules,
    customFields,
    resolvers: { data: options.resolvers?.data, patch: options.resolvers?.patch },
    after: options.after ?? {}
  }
  const batchWrites = chains && batch ? batchHooks(chains, batch) : undefined
  const createOne = writeChain(options.validators.data, references, customFields, rules.create, options.resolvers?.data)
  const patchOne = writeChain(options.validators.patch, references, customFields, rules.patch, options.resolvers?.patch)
  const patchMany = options.multiPatch
    ? [schemaHooks.validateData(options.multiPatch.data), ...(options.multiPatch.before ?? [])]
    : [refuseMultiPatch]
  const declaration: ReadDeclaration = {
    flag: options.joins?.flag,
    list: options.joins?.list,
    record: options.joins?.record,
    fields: Object.keys(schemas.result.properties),
    customFields: options.customFields?.by === 'name' ? options.customFields.entity : undefined
  }
  const read = readRequest(declaration, new Set(Object.keys(options.after ?? {})))
  const before: Record<string, ResourceHook[]> = {
    all: [validateQueries(options, flags, declaration), scopeFor(options)],
    find: [...(rules.find ?? []), read],
    get: [...(rules.get ?? []), read],
    create: [async (context: HookContext) => runAll(batchWrites && Array.isArray(context.data) ? [batchWrites.createMany] : createOne)(context)],
    patch: [async (context: HookContext) => runAll(context.id === null ? patchMany : patchOne)(context)],
    remove: rules.remove ?? []
  }
  for (const [name, method] of Object.entries(options.custom ?? {})) {
    before[name] = [schemaHooks.validateData(method.data), ...(method.before ?? [])]
  }
  if (batchWrites) Object.assign(before, batchWrites.before)

  const after: Record<string, ResourceHook[]> = {}
  for (const [method, hooks] of Object.entries(options.after ?? {})) after[method] = [...(after[method] ?? []), ...(hooks ?? [])]
  if (batchWrites) {
    // A batch create runs the resource's after rules once per record written.
    after.create = [async (context: HookContext) => runAll(Array.isArray(context.data) ? [batchWrites.afterCreateMany] : options.after?.create ?? [])(context)]
    Object.assign(after, batchWrites.after)
  }

  const cascades: SoftDeleteCascade[] = service.options?.softDeleteCascade ?? []
  const alsoChanges = cascades.length ? withCascadeEvents(options.alsoChanges ?? {}, cascades) : options.alsoChanges
  const transaction = writeTransaction(path, { alsoChanges, checksInWrite: inWrite, inTransaction: cascades.length ? ['remove', 'batch-delete'] : [], reads })
  const deletes = cascades.length ? { remove: [announceCascade], 'batch-delete': [announceCascade] } : {}
  app.service(path).hooks({
    around: {
      all: [authenticationFor(options), ...(batchWrites ? [emitBatchEvents] : []), transaction] as ((context: HookContext, next: NextFunction) => Promise<void>)[],
      ...deletes
    },
    before: before as any,
    after: after as any
  })
}

/**
 * The event types a delete causes besides its records' own: those of the dependants it
 * soft-deletes (the messages of any channel share one), so that the delete's transaction opens
 * when only they are subscribed to.
 */
function withCascadeEvents(alsoChanges: Record<string, string[]>, cascades: SoftDeleteCascade[]) {
  const types = cascades.map(({ path }) => eventTypeOf(path.replace(/\{\w+\}/g, ''), 'remove')).filter((type): type is string => Boolean(type))
  return { ...alsoChanges, remove: [...(alsoChanges.remove ?? []), ...types], 'batch-delete': [...(alsoChanges['batch-delete'] ?? []), ...types] }
}

/** How a service was registered: the hostile-input tests cover every tenant service by this mark. */
export const registrationOf = (app: Application, path: string): 'tenant-resource' | 'tenant-operation' | undefined =>
  (feathersCore.getServiceOptions(app.service(path as any)) as any)?.registeredAs

/**
 * Authentication, then the refusal of API-key callers where the resource declares it. A token
 * call without credentials passes: its token is checked by the service itself.
 */
function authenticationFor(options: TenantResourceOptions) {
  const { refuseApiKeys, tokenCalls } = options
  const batchOf: Record<string, string> = { upsert: 'create', 'batch-update': 'patch', 'batch-delete': 'remove' }
  const refuses = (method: string) =>
    refuseApiKeys === true || (Array.isArray(refuseApiKeys) && (refuseApiKeys.includes(method) || refuseApiKeys.includes(batchOf[method])))
  return async (context: HookContext, next: NextFunction) => {
    const { provider, authentication, caller } = context.params
    const anonymous = Boolean(provider && !authentication && !caller)
    if (anonymous && tokenCalls?.matches(context)) return next()
    return authenticated(context, async () => {
      if (refuses(context.method)) await refuseApiKeyCallers(context, async () => undefined)
      return next()
    })
  }
}

/** The tenant scope with the resource's roles, or the token calls' own scope. */
function scopeFor(options: TenantResourceOptions): ResourceHook {
  const tenant = scopeToTenant({ roles: options.batch ? batchRoles(options.roles) : options.roles })
  const { tokenCalls } = options
  return async (context) => (tokenCalls?.matches(context) ? tokenCalls.scope(context) : tenant(context))
}

/** A PATCH without an id changes nothing unless the resource declares what such a call means. */
const refuseMultiPatch: ResourceHook = async () => {
  throw new BadRequest('PATCH needs the id of the record to change')
}
