import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Validator } from '@feathersjs/schema'
import type { TSchema } from '@feathersjs/typebox'
import type { Application, HookContext, NextFunction, Role, ServiceTypes } from '../declarations.js'
import { authenticated } from '../hooks/authenticate.js'
import { scopeToTenant } from '../hooks/tenant-scope.js'
import type { ServiceDocs } from '../openapi.js'
import type { ResourceHook } from './tenant-resource.js'

export interface TenantOperationOptions {
  path: keyof ServiceTypes & string
  service: any
  methods: readonly string[]
  description: string
  /** One line for the OpenAPI document (default: the description's first sentence). */
  summary?: string
  /** For the OpenAPI document: the result, and the body of create or the query of find. */
  schemas: { result?: TSchema; data?: TSchema; query?: TSchema }
  /** The query of find, or the body of create. */
  validators: { query?: Validator; data?: Validator }
  roles?: Partial<Record<string, Role[]>>
  /** Rules run after validation and the tenant scope. */
  rules?: Partial<Record<'find' | 'create', ResourceHook[]>>
  after?: Partial<Record<'find' | 'create', ResourceHook[]>>
  docs?: Pick<ServiceDocs, 'paths'>
}

/**
 * Registers a tenant operation: a service that is not a table of records (available slots, a
 * tool call, a signed upload URL, a reorder) but acts in one organization like a resource. Its
 * chain is the resource chain without records: authentication → validation of the query (find)
 * or body (create) → tenant scope and role check → the operation's rules.
 */
export function tenantOperation(app: Application, options: TenantOperationOptions) {
  const { path, validators, rules = {} } = options
  app.use(path, options.service, {
    methods: [...options.methods],
    events: [],
    registeredAs: 'tenant-operation',
    docs: { description: options.description, summary: options.summary, paths: options.docs?.paths, schemas: options.schemas }
  } as any)
  const scope = scopeToTenant({ roles: options.roles })
  app.service(path).hooks({
    around: { all: [authenticated] as ((context: HookContext, next: NextFunction) => Promise<void>)[] },
    before: {
      find: [...(validators.query ? [schemaHooks.validateQuery(validators.query)] : []), scope, ...(rules.find ?? [])],
      create: [scope, ...(validators.data ? [schemaHooks.validateData(validators.data)] : []), ...(rules.create ?? [])]
    } as any,
    after: (options.after ?? {}) as any
  })
}

