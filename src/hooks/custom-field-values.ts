import { BadRequest } from '@feathersjs/errors'
import type { Knex } from 'knex'
import type { HookContext } from '../declarations.js'
import { oncePerCall } from './per-call.js'
import { targetOrganization } from './tenant-scope.js'
import { guardWrite } from '../engine/write-guards.js'
import { databaseOf } from '../db.js'

/**
 * Custom field values of companies, contacts, deals and reservations.
 *
 * Storage: the record's `custom_fields` jsonb column, an object keyed by the definition's
 * `key` (so renaming a field's `name` keeps its values). On the wire a record carries them by
 * name (`custom_fields_by_name`, companies/contacts/deals) or by key (`custom_fields_by_key`,
 * reservations).
 *
 * A resource declares its entity and addressing (tenantResource's `customFields`): its writes
 * store the values through storeCustomFieldValues, and its reads write them by name or key in
 * SQL (src/engine/read-model.ts).
 */

/** The records that carry custom fields, and the types a field's values may have. */
export const CUSTOM_FIELD_ENTITIES = ['company', 'contact', 'deal', 'reservation'] as const
export type CustomFieldEntity = (typeof CUSTOM_FIELD_ENTITIES)[number]
export const CUSTOM_FIELD_TYPES = ['text', 'number', 'boolean', 'date', 'select', 'multiselect', 'email', 'url', 'phone'] as const
export type CustomFieldType = (typeof CUSTOM_FIELD_TYPES)[number]

export type CustomFieldAddressing = 'name' | 'key'

export interface CustomFieldDefinition {
  id: number
  organization_id: number
  key: string
  name: string
  field_type: CustomFieldType
  options: string[] | null
  required: boolean
}

/**
 * Words a custom field may not be named or keyed: as property names they would reach an
 * object's prototype. Values are mapped on null-prototype objects anyway (see valuesObject);
 * refusing the names keeps every client's own mapping safe too.
 */
export const RESERVED_FIELD_WORDS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype'])

/** Before hook of custom field create and patch: a reserved key or name is a 400 naming it. */
export const refuseReservedFieldNames = async (context: HookContext) => {
  const data = (context.data ?? {}) as Record<string, unknown>
  const errors: Record<string, string> = {}
  for (const field of ['key', 'name']) {
    const value = data[field]
    if (typeof value === 'string' && RESERVED_FIELD_WORDS.has(value.trim())) errors[field] = 'is a reserved word'
  }
  if (Object.keys(errors).length) throw new BadRequest('Invalid custom field', { errors })
  return context
}

/** A name-to-value map with no prototype: a field called __proto__ or constructor is just a key. */
const valuesObject = (): Record<string, unknown> => Object.create(null)

/** The body property carrying the values for each addressing mode. */
export const customFieldsProperty = (by: CustomFieldAddressing) => (by === 'name' ? 'custom_fields_by_name' : 'custom_fields_by_key')

/** The live definitions of one entity type for some organizations, in one query. */
export async function loadDefinitions(db: Knex, organizationIds: number[], entityType: CustomFieldEntity): Promise<CustomFieldDefinition[]> {
  if (organizationIds.length === 0) return []
  return db('custom_fields')
    .select('id', 'organization_id', 'key', 'name', 'field_type', 'options', 'required')
    .whereIn('organization_id', [...new Set(organizationIds)])
    .where('entity_type', entityType)
    .whereNull('deleted_at')
    .orderBy([{ column: 'position' }, { column: 'id' }])
}

/**
 * Definitions loaded at most once per service call and organization: every row a call
 * resolves (a whole page) shares one query, and so do the call's validation and its output.
 */
export function definitionsFor(context: HookContext, organizationId: number, entityType: CustomFieldEntity) {
  return oncePerCall(context, `custom-fields:${organizationId}:${entityType}`, () => loadDefinitions(databaseOf(context.params, context.app.get('knex')), [organizationId], entityType))
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
const PHONE = /^\+?[\d\s().-]{3,30}$/

const isCalendarDate = (value: string) => {
  const match = DATE.exec(value)
  if (!match) return false
  const date = new Date(`${value}T00:00:00Z`)
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value
}

const isHttpUrl = (value: string) => {
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}

const MAX_TEXT = 10_000

/** Why a value does not fit its definition, or undefined when it does. */
export function valueProblem(definition: CustomFieldDefinition, value: unknown): string | undefined {
  const options = definition.options ?? []
  switch (definition.field_type) {
    case 'text':
      return typeof value === 'string' && value.length <= MAX_TEXT ? undefined : `must be a text of at most ${MAX_TEXT} characters`
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a number'
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be true or false'
    case 'date':
      return typeof value === 'string' && isCalendarDate(value) ? undefined : 'must be a date YYYY-MM-DD'
    case 'email':
      return typeof value === 'string' && value.length <= 320 && EMAIL.test(value) ? undefined : 'must be a valid email'
    case 'url':
      return typeof value === 'string' && value.length <= 2000 && isHttpUrl(value) ? undefined : 'must be an http(s) URL'
    case 'phone':
      return typeof value === 'string' && PHONE.test(value) && /\d.*\d.*\d/.test(value) ? undefined : 'must be a phone number'
    case 'select':
      return typeof value === 'string' && options.includes(value) ? undefined : `must be one of: ${options.join(', ')}`
    case 'multiselect':
      return Array.isArray(value) && value.every((v) => typeof v === 'string' && options.includes(v)) && new Set(value).size === value.length
        ? undefined
        : `must be a list of distinct values among: ${options.join(', ')}`
    default:
      return 'has an unknown field type'
  }
}

export interface CustomFieldChanges {
  /** Values to store, keyed by definition key. */
  set: Record<string, unknown>
  /** Definition keys whose value is cleared (sent as null). */
  cleared: string[]
}

/**
 * Validates values sent by name or by key against the live definitions. Unknown fields, values
 * of the wrong type, options not in the list and (on create) missing required fields throw one
 * 400 whose errors name every offending field, e.g. errors['custom_fields_by_name.Budget'].
 * On patch only the fields sent change; null clears a value, which a required field refuses.
 */
export function validateCustomFieldValues(
  definitions: CustomFieldDefinition[],
  input: Record<string, unknown> | undefined,
  { by, mode }: { by: CustomFieldAddressing; mode: 'create' | 'patch' }
): CustomFieldChanges {
  const property = customFieldsProperty(by)
  const byAddress = new Map(definitions.map((definition) => [definition[by], definition]))
  const errors: Record<string, string> = {}
  const changes: CustomFieldChanges = { set: valuesObject(), cleared: [] }
  for (const [address, value] of Object.entries(input ?? {})) {
    const definition = byAddress.get(address)
    if (!definition) {
      errors[`${property}.${address}`] = `is not a custom field ${by} of this organization`
    } else if (value === null) {
      if (definition.required) errors[`${property}.${address}`] = 'is required'
      else changes.cleared.push(definition.key)
    } else {
      const problem = valueProblem(definition, value)
      if (problem) errors[`${property}.${address}`] = problem
      else changes.set[definition.key] = value
    }
  }
  if (mode === 'create') {
    for (const definition of definitions) {
      if (definition.required && !Object.hasOwn(changes.set, definition.key)) {
        errors[`${property}.${definition[by]}`] ??= 'is required'
      }
    }
  }
  if (Object.keys(errors).length) throw new BadRequest('Invalid custom field values', { errors })
  return changes
}

/**
 * Before hook for create and patch: validates data.custom_fields_by_name (or _by_key) against
 * the organization's definitions and replaces it with the storage column `custom_fields`.
 * Create stores the object; patch merges per field in the UPDATE itself (jsonb || and -), so
 * two concurrent patches of different fields both survive. Place it after validateData and
 * scopeToTenant (it needs the target organization).
 */
export const storeCustomFieldValues = (entityType: CustomFieldEntity, by: CustomFieldAddressing, { inWrite = false } = {}) => async (context: HookContext) => {
  const data = context.data as Record<string, any>
  const property = customFieldsProperty(by)
  const input = data[property] as Record<string, unknown> | undefined
  delete data[property]
  const mode = context.method === 'create' ? 'create' : 'patch'
  if (mode === 'patch' && input === undefined) return context
  const organizationId = await targetOrganization(context)
  const db = context.app.get('knex')
  if (mode === 'create' && input === undefined) {
    // No values: the write only needs the organization to require none, which its statement can check (inWrite).
    const check = async () => void validateCustomFieldValues(await definitionsFor(context, organizationId, entityType), input, { by, mode })
    const holds = {
      sql: 'NOT EXISTS (SELECT 1 FROM custom_fields WHERE organization_id = ? AND entity_type = ? AND required AND deleted_at IS NULL)',
      bindings: [organizationId, entityType]
    }
    if (!inWrite || !guardWrite(context, { holds, check })) await check()
    data.custom_fields = '{}'
    return context
  }
  const definitions = await definitionsFor(context, organizationId, entityType)
  const { set, cleared } = validateCustomFieldValues(definitions, input, { by, mode })
  data.custom_fields = mode === 'create'
    ? JSON.stringify(set)
    : db.raw(`(coalesce(??, '{}'::jsonb) || ?::jsonb) - ?::text[]`, ['custom_fields', JSON.stringify(set), cleared])
  return context
}
