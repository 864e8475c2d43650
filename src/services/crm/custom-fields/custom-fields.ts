import { BadRequest, Conflict } from '@feathersjs/errors'
import type { Application, HookContext } from '../../../declarations.js'
import { loadBefore } from '../../../hooks/tenant-scope.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { CustomFieldService, getOptions } from './custom-fields.class.js'
import {
  SELECT_TYPES, customFieldDataResolver, customFieldDataSchema, customFieldDataValidator,
  customFieldPatchResolver, customFieldPatchSchema, customFieldPatchValidator, customFieldQuerySchema,
  customFieldQueryValidator, customFieldSchema
} from './custom-fields.schema.js'
import { customFieldMethods, customFieldPath } from './custom-fields.shared.js'
import { refuseReservedFieldNames } from '../../../hooks/custom-field-values.js'
import { databaseOf } from '../../../db.js'

export * from './custom-fields.class.js'
export * from './custom-fields.schema.js'

/**
 * A definition's options fit its type (select types need a non-empty list, others none), and
 * its key and name are free among the live definitions of its organization and entity type.
 * The partial unique indexes of the migration back the uniqueness check up under concurrency.
 */
const checkDefinition = async (context: HookContext) => {
  const data = context.data as Record<string, any>
  const current = context.method === 'patch' ? await loadBefore(context) : data
  const fieldType = current.field_type
  const options = data.options !== undefined ? data.options : context.method === 'create' ? null : current.options
  const errors: Record<string, string> = {}
  if (SELECT_TYPES.includes(fieldType) && !(Array.isArray(options) && options.length > 0)) {
    errors.options = `is required for ${fieldType} fields: a list of at least one choice`
  } else if (!SELECT_TYPES.includes(fieldType) && Array.isArray(options)) {
    errors.options = 'is only allowed for select and multiselect fields'
  }
  if (Object.keys(errors).length) throw new BadRequest('Invalid custom field', { errors })

  const key = context.method === 'create' ? data.key : undefined
  const name = typeof data.name === 'string' ? data.name.trim() : undefined
  if (key === undefined && name === undefined) return context
  const db = databaseOf(context.params, context.app.get('knex'))
  const taken = await db('custom_fields')
    .select('key', 'name')
    .where({ organization_id: current.organization_id, entity_type: current.entity_type })
    .whereNull('deleted_at')
    .where((q) => {
      if (key !== undefined) q.orWhere('key', key)
      if (name !== undefined) q.orWhereRaw('lower(name) = lower(?)', [name])
    })
    .modify((q) => { if (context.id !== undefined && context.id !== null) q.whereNot('id', context.id) })
  for (const row of taken) {
    if (key !== undefined && row.key === key) errors.key = `is already used by another ${current.entity_type} custom field`
    if (name !== undefined && row.name.toLowerCase() === name.toLowerCase()) errors.name = `is already used by another ${current.entity_type} custom field`
  }
  if (Object.keys(errors).length) throw new Conflict('A custom field with this key or name already exists', { errors })
  return context
}

export const customField = (app: Application) =>
  tenantResource(app, {
    path: customFieldPath,
    service: new CustomFieldService(getOptions(app)),
    methods: customFieldMethods,
    description: 'Custom field definitions of companies, contacts, deals and reservations ($limit at most 50).',
    schemas: { result: customFieldSchema, data: customFieldDataSchema, patch: customFieldPatchSchema, query: customFieldQuerySchema },
    validators: { query: customFieldQueryValidator, data: customFieldDataValidator, patch: customFieldPatchValidator },
    resolvers: { data: customFieldDataResolver, patch: customFieldPatchResolver },
    rules: { create: [refuseReservedFieldNames, checkDefinition], patch: [refuseReservedFieldNames, checkDefinition] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [customFieldPath]: CustomFieldService
  }
}
