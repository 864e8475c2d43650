import type { HookContext } from '../declarations.js'
import { fieldError } from './errors.js'
import { MAX_IN_LIST } from '../schemas.js'
import { definitionsFor, valueProblem } from './custom-field-values.js'
import type { CustomFieldDefinition } from './custom-field-values.js'
import type { CustomFieldEntity } from './custom-field-values.js'
import type { CustomFieldFilter } from '../engine/read-request.js'

/** The list query keys that filter on a custom field by name: custom_fields_by_name.<name>. */
export const CUSTOM_FIELD_FILTER = 'custom_fields_by_name.'

/**
 * custom_fields_by_name.<name> filters of a list, once the organization is pinned: each name
 * must be a live custom field of the organization (else 400 naming it); equality and $in on any
 * field, ranges ($gt, $gte, $lt, $lte) on number and date fields; values checked like stored ones.
 */
export async function customFieldFilters(context: HookContext, entity: CustomFieldEntity, organizationId: number, input: Record<string, unknown>) {
  const definitions = new Map((await definitionsFor(context, organizationId, entity)).map((definition) => [definition.name, definition]))
  const filters: CustomFieldFilter[] = []
  for (const [name, condition] of Object.entries(input)) {
    const definition = definitions.get(name)
    if (!definition) throw fieldError(`${CUSTOM_FIELD_FILTER}${name}`, 'is not a custom field name of this organization')
    filters.push(...customFieldConditions(definition, condition))
  }
  return filters
}

const RANGE_OPERATORS = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' } as const
type RangeOperator = keyof typeof RANGE_OPERATORS

/** Query strings are text: a number or boolean field's value arrives as '5' or 'true'. */
function coerceFilterValue(definition: CustomFieldDefinition, value: unknown) {
  if (typeof value !== 'string') return value
  if (definition.field_type === 'number' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value)
  if (definition.field_type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true'
  return value
}

/** The conditions of one custom-field filter: a containment (equality, $in) and/or a range. */
function customFieldConditions(definition: CustomFieldDefinition, condition: unknown): CustomFieldFilter[] {
  const field = `${CUSTOM_FIELD_FILTER}${definition.name}`
  const multiselect = definition.field_type === 'multiselect'
  // A multiselect value matches when it holds the option asked for.
  const contained = (raw: unknown) => {
    const value = coerceFilterValue(definition, raw)
    const problem = multiselect ? valueProblem(definition, [value]) : valueProblem(definition, value)
    if (problem) throw fieldError(field, problem)
    return { [definition.key]: multiselect ? [value] : value }
  }
  const isOperators = condition !== null && typeof condition === 'object' && !Array.isArray(condition)
  if (!isOperators) return [{ anyOf: [contained(condition)] }]
  const filters: CustomFieldFilter[] = []
  const comparisons: ['>' | '>=' | '<' | '<=', unknown][] = []
  const ranged = definition.field_type === 'number' || definition.field_type === 'date'
  for (const [operator, value] of Object.entries(condition as Record<string, unknown>)) {
    if (operator === '$in') {
      const values = Array.isArray(value) ? value : [value]
      if (values.length === 0 || values.length > MAX_IN_LIST) throw fieldError(field, `$in takes 1 to ${MAX_IN_LIST} values`)
      filters.push({ anyOf: values.map(contained) })
    } else if (operator in RANGE_OPERATORS && ranged) {
      const bound = coerceFilterValue(definition, value)
      const problem = valueProblem(definition, bound)
      if (problem) throw fieldError(field, problem)
      comparisons.push([RANGE_OPERATORS[operator as RangeOperator], bound])
    } else {
      throw fieldError(field, `takes a value, $in${ranged ? ', $gt, $gte, $lt or $lte' : ''} (${definition.field_type} field)`)
    }
  }
  if (comparisons.length > 0) {
    filters.push({ key: definition.key, type: definition.field_type === 'number' ? 'number' : 'date', comparisons })
  }
  return filters
}

