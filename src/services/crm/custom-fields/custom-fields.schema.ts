import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'

import { CUSTOM_FIELD_ENTITIES, CUSTOM_FIELD_TYPES } from '../../../hooks/custom-field-values.js'
import type { CustomFieldEntity, CustomFieldType } from '../../../hooks/custom-field-values.js'

export { CUSTOM_FIELD_ENTITIES, CUSTOM_FIELD_TYPES }
export type { CustomFieldEntity, CustomFieldType }

/** Field types whose values come from the definition's options. */
export const SELECT_TYPES: readonly CustomFieldType[] = ['select', 'multiselect']

export const customFieldSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    entity_type: Type.Union(CUSTOM_FIELD_ENTITIES.map((entity) => Type.Literal(entity))),
    key: Type.String({ pattern: '^[a-z][a-z0-9_]*$', minLength: 1, maxLength: 64, description: 'slug: lower-case letters, digits, underscores; starts with a letter' }),
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: 'label shown to users' }),
    field_type: Type.Union(CUSTOM_FIELD_TYPES.map((type) => Type.Literal(type))),
    options: Nullable(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { uniqueItems: true, maxItems: 500, description: 'choices of select and multiselect fields' })),
    required: Type.Boolean({ default: false }),
    position: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    ...softDeleteTimestamps
  },
  { $id: 'CustomField', additionalProperties: false }
)
export type CustomField = Static<typeof customFieldSchema>

const changeable = {
  name: customFieldSchema.properties.name,
  options: Type.Optional(customFieldSchema.properties.options),
  required: Type.Optional(customFieldSchema.properties.required),
  position: Type.Optional(customFieldSchema.properties.position)
}

export const customFieldDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    entity_type: customFieldSchema.properties.entity_type,
    key: customFieldSchema.properties.key,
    field_type: customFieldSchema.properties.field_type,
    ...changeable
  },
  { $id: 'CustomFieldData', additionalProperties: false }
)
export type CustomFieldData = Static<typeof customFieldDataSchema>
export const customFieldDataValidator = getValidator(customFieldDataSchema, dataValidator)
export const customFieldDataResolver = resolve<any, HookContext>({
  name: async (value) => (typeof value === 'string' ? value.trim() : value),
  options: async (value) => (value === undefined || value === null ? null : JSON.stringify(value)),
  required: async (value) => value ?? false,
  position: async (value) => value ?? 0
})

// key, entity_type and field_type are fixed at creation: stored values are keyed and typed by them.
export const customFieldPatchSchema = Type.Partial(Type.Object(changeable), { $id: 'CustomFieldPatch', additionalProperties: false })
export type CustomFieldPatch = Static<typeof customFieldPatchSchema>
export const customFieldPatchValidator = getValidator(customFieldPatchSchema, dataValidator)
export const customFieldPatchResolver = resolve<any, HookContext>({
  name: async (value) => (typeof value === 'string' ? value.trim() : value),
  options: async (value) => (value === undefined ? undefined : value === null ? null : JSON.stringify(value))
})

export const customFieldQuerySchema = Type.Object(
  { ...listQuery(customFieldSchema, ['organization_id', 'entity_type', 'key', 'name', 'field_type', 'position']).properties },
  { $id: 'CustomFieldQuery', additionalProperties: false }
)
export type CustomFieldQuery = Static<typeof customFieldQuerySchema>
export const customFieldQueryValidator = getValidator(customFieldQuerySchema, queryValidator)
