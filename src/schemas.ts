import { Type } from '@feathersjs/typebox'
import { SEARCH_TOTAL_CAP } from './engine/search.js'
import type { TSchema, TObject, TProperties } from '@feathersjs/typebox'

/** Shared building blocks for resource schemas. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const RecordId = Type.Integer({ minimum: 1 })

/** Records have serial (int4) ids: an id from a path is one when written in digits, from 1 to MAX_RECORD_ID. */
const MAX_RECORD_ID = 2_147_483_647
export const isRecordId = (id: unknown): boolean => /^[1-9]\d{0,9}$/.test(String(id)) && Number(id) <= MAX_RECORD_ID
export const RECORD_ID_MESSAGE = `must be a record id: a whole number between 1 and ${MAX_RECORD_ID}`

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' })

export const timestamps = {
  created_at: Timestamp,
  updated_at: Timestamp
}

export const softDeleteTimestamps = {
  ...timestamps,
  deleted_at: Nullable(Timestamp)
}

/** A client-chosen id of a record (e.g. the id in the system it is imported from): unique per organization among live records. */
export const ExternalId = Nullable(Type.String({ minLength: 1, maxLength: 200, description: "the client's own id of the record, unique per organization among live records" }))

export const DecimalString = Type.String({ pattern: '^-?\\d+(\\.\\d+)?$', description: 'exact decimal' })

/** A calendar date without a time zone, e.g. a deal's expected close date or an activity's day. */
export const CalendarDate = Type.String({ format: 'date', description: 'YYYY-MM-DD' })

const CLOCK = '([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d)?'

/** A wall-clock time of day, HH:MM or HH:MM:SS from 00:00 to 23:59:59; returned as HH:MM:SS. */
export const TimeOfDay = Type.String({ pattern: `^${CLOCK}$`, description: 'wall-clock time HH:MM[:SS]' })

/** The end of a span of a day: a time of day, or 24:00 for the end of the day. */
export const EndTimeOfDay = Type.String({ pattern: `^(${CLOCK}|24:00(:00)?)$`, description: 'wall-clock time HH:MM[:SS]; 24:00 is the end of the day' })

/** Seconds since midnight of an HH:MM[:SS] text, for comparisons. */
export const secondsOf = (time: string) => {
  const [h, m, s = 0] = time.split(':').map(Number)
  return h * 3600 + m * 60 + s
}

/** An IANA time zone name; null means "the organization's". Checked by checkTimeZone. */
export const TimeZoneField = Nullable(Type.String({ minLength: 1, maxLength: 64, description: "IANA time zone name, e.g. Europe/Madrid; null: the organization's" }))

/** A user as related records show them (creator, owner, assignee). */
export const UserSummary = Type.Object({ id: RecordId, first_name: Nullable(Type.String()), last_name: Nullable(Type.String()) })

/** The most values an $in or $nin list may carry: longer lists are a 400, not a giant statement. */
export const MAX_IN_LIST = 500

const comparison = (def: TSchema) =>
  Type.Object(
    {
      $gt: def, $gte: def, $lt: def, $lte: def, $ne: def,
      $in: Type.Array(def, { maxItems: MAX_IN_LIST }), $nin: Type.Array(def, { maxItems: MAX_IN_LIST })
    },
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
  /**
   * The sync and partial-read parameters (docs/bulk-and-sync.md): $select, $or, $after and, on a
   * soft-deleted resource, $withDeleted. The resource factory and RecordService serve them.
   */
  sync?: boolean
}

/** The most branches an $or may have. */
export const MAX_OR_BRANCHES = 10

/** The keyset cursor of a sync page: the (updated_at, id) of the last record already read. */
export const KeysetCursor = Type.Object(
  { updated_at: Timestamp, id: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false, description: 'the updated_at and id of the last record read; the next page starts after it' }
)

/** The query parameters of sync and partial reads, for a list schema with these filter properties. */
function syncParameters(resource: TObject, filters: TProperties): TProperties {
  const parameters: TProperties = {
    $select: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: 100, description: 'fields to return (id always)' })),
    $or: Type.Optional(
      Type.Array(Type.Object(filters, { additionalProperties: false, minProperties: 1 }), {
        minItems: 1, maxItems: MAX_OR_BRANCHES, description: `records matching any of these filters (at most ${MAX_OR_BRANCHES})`
      })
    )
  }
  if ('updated_at' in resource.properties) {
    parameters.$after = Type.Optional(KeysetCursor)
  }
  if ('deleted_at' in resource.properties) {
    parameters.$withDeleted = Type.Optional(Type.Boolean({ description: "include deleted records (with their deleted_at), until the organization's retention (deleted_retention_days) removes them for good" }))
  }
  return parameters
}

/**
 * The query schema of a list call: id and the filterable properties with their operators, $limit,
 * $skip, $sort on those properties, and named flags. Anything else is a 400.
 */
export function listQuery<T extends TObject>(resource: T, filterable: (keyof T['properties'] & string)[], options: ListQueryOptions = {}) {
  const properties: TProperties = {}
  // Every list can fetch records by id: {id: {$in: [...]}}.
  for (const key of ['id', ...filterable]) {
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
      ...(options.sync ? syncParameters(resource, properties) : {}),
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

/** The fields every `search` custom method takes: a term of at least 2 characters, the organization, a page. */
export const searchFields = {
  searchTerm: Type.String({ minLength: 2, maxLength: 200 }),
  organization_id: Type.Optional(RecordId),
  $limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  $skip: Type.Optional(Type.Integer({ minimum: 0 }))
}

/** The body of a plain term `search` (partial match on the resource's searchable columns). */
export const termSearch = ($id: string) => Type.Object(searchFields, { $id, additionalProperties: false })

/** The answer of every `search` custom method: the list envelope with total_capped (src/engine/search.ts), so a search pages like a list. */
export const searchResult = ($id: string, item: TSchema) =>
  Type.Object(
    {
      total: Type.Integer({ description: `matches, exact up to ${SEARCH_TOTAL_CAP}; above, ${SEARCH_TOTAL_CAP} with total_capped true` }),
      total_capped: Type.Boolean({ description: `true when more than ${SEARCH_TOTAL_CAP} records match: total stopped at the cap, and pages ($skip + $limit) reach the first ${SEARCH_TOTAL_CAP} only` }),
      limit: Type.Integer(),
      skip: Type.Integer(),
      data: Type.Array(item, { description: 'records whose text starts with the term first, then the other matches' })
    },
    { $id }
  )

/**
 * Decimal inputs (money, quantities, percentages): a JSON number or an exact decimal string
 * ('10.50'). A string's pattern holds its range and decimal places; a number's decimal places are
 * checked by checkAmounts on the text the client sent (a binary float cannot tell
 * 19.999999999999999999 from 20). Stored and returned as exact decimal strings.
 */
export const MONEY_PATTERN = '^\\d{1,12}(\\.\\d{1,2})?$'
export const QUANTITY_PATTERN = '^(?!0*(\\.0*)?$)\\d{1,10}(\\.\\d{1,4})?$'
export const PERCENTAGE_PATTERN = '^(100(\\.0{1,2})?|\\d{1,2}(\\.\\d{1,2})?)$'

const decimalInput = (number: { minimum?: number; exclusiveMinimum?: number; maximum: number }, pattern: string, description: string) =>
  Type.Union([Type.Number(number), Type.String({ pattern })], { description })

export const MoneyInput = (description = 'a number or a decimal string, at most 2 decimal places, e.g. 1500 or "1500.50"') =>
  decimalInput({ minimum: 0, maximum: 999_999_999_999.99 }, MONEY_PATTERN, description)

export const QuantityInput = (description = 'greater than 0, a number or a decimal string, at most 4 decimal places, e.g. 2.5 or "2.5"') =>
  decimalInput({ exclusiveMinimum: 0, maximum: 9_999_999_999 }, QUANTITY_PATTERN, description)

export const PercentageInput = (description = '0 to 100, a number or a decimal string, at most 2 decimal places, e.g. 21 or "7.5"') =>
  decimalInput({ minimum: 0, maximum: 100 }, PERCENTAGE_PATTERN, description)
