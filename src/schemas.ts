import { Type } from '@feathersjs/typebox'
import type { TSchema, TObject, TProperties } from '@feathersjs/typebox'

/** Shared building blocks for resource schemas. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const RecordId = Type.Integer({ minimum: 1 })

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' })

export const timestamps = {
  created_at: Timestamp,
  updated_at: Timestamp
}

export const softDeleteTimestamps = {
  ...timestamps,
  deleted_at: Nullable(Timestamp)
}

export const DecimalString = Type.String({ pattern: '^-?\\d+(\\.\\d+)?$', description: 'exact decimal' })

const comparison = (def: TSchema) =>
  Type.Object(
    { $gt: def, $gte: def, $lt: def, $lte: def, $ne: def, $in: Type.Array(def), $nin: Type.Array(def) },
    { additionalProperties: false, minProperties: 1 }
  )

/** A filterable property: a value, or an object of comparison operators (unknown operators rejected). */
export const filterOn = (def: TSchema, extra: TProperties = {}) =>
  Type.Optional(
    Type.Union([
      def,
      Type.Partial(Type.Object({ ...comparison(def).properties, ...extra }, { additionalProperties: false }))
    ])
  )

export interface ListQueryOptions {
  /** Extra top-level flags, e.g. fastJoinForCompanyList. */
  flags?: TProperties
  /** Extra operators per property, e.g. { name: { $ilike: Type.String() } }. */
  operators?: Record<string, TProperties>
}

/**
 * The query schema of a list call: the filterable properties with their operators, $limit,
 * $skip, $sort on those properties, and named flags. Anything else is a 400.
 */
export function listQuery<T extends TObject>(resource: T, filterable: (keyof T['properties'] & string)[], options: ListQueryOptions = {}) {
  const properties: TProperties = {}
  for (const key of filterable) {
    properties[key] = filterOn(resource.properties[key], options.operators?.[key])
  }
  const sortable: TProperties = {}
  for (const key of [...filterable, 'id', 'created_at', 'updated_at']) {
    if (key in resource.properties) sortable[key] = Type.Optional(Type.Integer({ minimum: -1, maximum: 1 }))
  }
  return Type.Object(
    {
      $limit: Type.Optional(Type.Integer({ minimum: 0 })),
      $skip: Type.Optional(Type.Integer({ minimum: 0 })),
      $sort: Type.Optional(Type.Object(sortable, { additionalProperties: false })),
      ...properties,
      ...(options.flags ?? {})
    },
    { additionalProperties: false }
  )
}

/** The spec's list envelope around a resource schema (for the OpenAPI document). */
export const envelope = (item: TSchema) =>
  Type.Object({
    total: Type.Integer(),
    limit: Type.Integer(),
    skip: Type.Integer(),
    data: Type.Array(item)
  })

/** The body of a `search` custom method: a term of at least 2 characters, the organization, a page size. */
export const termSearch = ($id: string) =>
  Type.Object(
    {
      searchTerm: Type.String({ minLength: 2, maxLength: 200 }),
      organization_id: Type.Optional(RecordId),
      $limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 }))
    },
    { $id, additionalProperties: false }
  )
