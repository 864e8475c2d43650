import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery, softDeleteTimestamps } from '../../../schemas.js'
import { IMPORTED_RESOURCES } from './mapping.js'
import { ENCODINGS } from './csv-file.js'

export const IMPORT_STATUSES = ['previewed', 'queued', 'running', 'completed', 'failed', 'cancelled'] as const

const Resource = Type.Unsafe<(typeof IMPORTED_RESOURCES)[number]>({ type: 'string', enum: [...IMPORTED_RESOURCES], description: 'what the rows are' })
const Mapping = Type.Record(Type.String(), Nullable(Type.String()), {
  description: "column of the file → field of the resource, 'company_name' (contacts and deals: the company of that name, found or created), " +
    "'custom_fields_by_name.<name>', or null (not imported)"
})
const Keys = Type.Array(Type.String(), {
  maxItems: 3, uniqueItems: true,
  description: "upsert keys in order of preference (contacts: email, phone, external_id; companies: domain, name, external_id; deals: external_id): a row is matched by the first it has a value for, a row with none is created"
})

const RowErrors = Type.Object({ row: Type.Integer({ description: 'the row of the file, 1 being the first after the header' }), errors: Type.Record(Type.String(), Type.String()) })

export const importPreviewSchema = Type.Object({
  rows: Type.Integer({ description: 'data rows of the file' }),
  to_create: Type.Integer(),
  to_update: Type.Integer({ description: 'rows matching a stored record, or an earlier row of the file, by the keys' }),
  invalid: Type.Integer({ description: 'rows the resource refuses (they would go to the failures)' }),
  companies_to_create: Type.Integer({ description: 'companies named in the rows that do not exist yet' }),
  errors: Type.Array(RowErrors, { description: 'the first 20 refused rows with their errors by field' })
}, { description: 'the dry run of the whole file with the mapping and keys: nothing was written' })

export const importSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    resource: Resource,
    status: Type.Unsafe<(typeof IMPORT_STATUSES)[number]>({
      type: 'string', enum: [...IMPORT_STATUSES],
      description: 'previewed (uploaded, not started) → queued → running → completed; failed when it cannot go on (error says why); cancelled'
    }),
    file_name: Type.String(),
    file_size: Type.Integer({ description: 'bytes' }),
    file_key: Type.String(),
    encoding: Type.Unsafe<(typeof ENCODINGS)[number]>({ type: 'string', enum: [...ENCODINGS] }),
    delimiter: Type.String({ description: "',', ';' or a tab" }),
    columns: Type.Array(Type.String(), { description: "the file's header" }),
    mapping: Mapping,
    keys: Keys,
    preview: Nullable(importPreviewSchema),
    rows_read: Type.Integer({ description: 'rows imported so far (created, updated or failed)' }),
    rows_created: Type.Integer(),
    rows_updated: Type.Integer(),
    rows_failed: Type.Integer({ description: 'rows refused: download them with GET /imports/{id} and Accept: text/csv' }),
    last_row: Type.Integer(),
    error: Nullable(Type.String({ description: 'why a failed import stopped' })),
    created_by_user_id: Nullable(RecordId),
    created_by_api_key_id: Nullable(RecordId),
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
    ...softDeleteTimestamps
  },
  { $id: 'Import', additionalProperties: false }
)
export type Import = Static<typeof importSchema>

/** The text fields of the multipart upload (the file itself arrives as params.upload). */
export const importDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    resource: Resource,
    encoding: Type.Optional(Type.Unsafe<(typeof ENCODINGS)[number]>({ type: 'string', enum: [...ENCODINGS], description: "the file's character set: utf8 (the default) or latin1 (ISO-8859-1)" })),
    delimiter: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: [',', ';', 'tab', '\t'], description: "',', ';' or 'tab'; detected from the header line when left out" })),
    mapping: Type.Optional(Type.String({ maxLength: 10_000, description: 'JSON object, column → target (see the record); proposed from the header when left out' })),
    keys: Type.Optional(Type.String({ maxLength: 200, description: 'comma-separated upsert keys, e.g. email,external_id; none: every row is created' }))
  },
  { $id: 'ImportData', additionalProperties: false }
)
export type ImportData = Static<typeof importDataSchema>
export const importDataValidator = getValidator(importDataSchema, dataValidator)

/** The multipart form as the OpenAPI document shows it. */
export const importUploadSchema = Type.Object(
  { ...importDataSchema.properties, file: Type.String({ format: 'binary', description: 'the CSV file' }) },
  { $id: 'ImportUpload' }
)

export const importPatchSchema = Type.Object(
  { mapping: Type.Optional(Mapping), keys: Type.Optional(Keys) },
  { $id: 'ImportPatch', additionalProperties: false, description: 'a previewed import only: another mapping or keys, previewed again' }
)
export type ImportPatch = Static<typeof importPatchSchema>
export const importPatchValidator = getValidator(importPatchSchema, dataValidator)

export const importQuerySchema = Type.Object(
  { ...listQuery(importSchema, ['organization_id', 'resource', 'status', 'created_by_user_id', 'created_at', 'updated_at']).properties },
  { $id: 'ImportQuery', additionalProperties: false }
)
export type ImportQuery = Static<typeof importQuerySchema>
export const importQueryValidator = getValidator(importQuerySchema, queryValidator)

export const importActionSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), id: Type.Optional({ ...RecordId, description: "the import's id, for a call without a path (Socket.io)" }) },
  { $id: 'ImportAction', additionalProperties: false }
)
export type ImportAction = Static<typeof importActionSchema>
export const importActionValidator = getValidator(importActionSchema, dataValidator)
