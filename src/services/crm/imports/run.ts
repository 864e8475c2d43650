import { Forbidden } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import { stringify } from 'csv-stringify/sync'
import type { Knex } from 'knex'
import type { Application, Caller, Role } from '../../../declarations.js'
import { liveApiKeys, keyExpired } from '../../../authentication.js'
import { openTransaction } from '../../../hooks/deferred-events.js'
import { loadDefinitions } from '../../../hooks/custom-field-values.js'
import { escapeFormula } from '../../../engine/csv-export.js'
import type { OutboxJob } from '../../../outbox/index.js'
import type { JobOutcome } from '../../../outbox/worker.js'
import { CHUNK_ROWS, errorText, importChunk } from './chunk.js'
import type { ChunkOutcome, ChunkPlan } from './chunk.js'
import { rowsOf } from './csv-file.js'
import type { CsvRow, Encoding } from './csv-file.js'
import { entityOf, rowReader } from './mapping.js'
import type { ImportedResource, Mapping } from './mapping.js'

/**
 * An import's preview and its run (docs/import-export.md). The run is an outbox job (topic
 * 'imports'): it reads the stored file again, row by row, and imports it in chunks, each in one
 * transaction that also records the chunk's failed rows, the counts and the number of its last
 * row. A job that stops (a restart, a lost lease) is run again and goes on after that row: no row
 * is lost, none is imported twice. A cancel is seen at the next chunk.
 */

export const IMPORT_TOPIC = 'imports'
/** The row errors a preview shows. */
const PREVIEW_ERRORS = 20
const FAILURES_PAGE = 1000

/** An import's row as stored. */
export interface ImportRow {
  id: number
  organization_id: number
  resource: ImportedResource
  status: string
  file_key: string
  encoding: Encoding
  delimiter: string
  columns: string[]
  mapping: Mapping
  keys: string[]
  last_row: number
  created_by_user_id: number
  created_by_api_key_id: number | null
}

export interface Preview {
  rows: number
  to_create: number
  to_update: number
  invalid: number
  companies_to_create: number
  errors: { row: number; errors: Record<string, string> }[]
}

/** The importer as a caller again (its membership, its key if it used one), for a job that runs without its request. */
export async function importerOf(db: Knex, record: Pick<ImportRow, 'organization_id' | 'created_by_user_id' | 'created_by_api_key_id'>): Promise<Caller> {
  const organizationId = record.organization_id
  if (record.created_by_api_key_id !== null) {
    const key = await liveApiKeys(db).where({ 'k.id': record.created_by_api_key_id, 'k.organization_id': organizationId }).first('k.user_id', 'k.expires_at', 'm.role')
    if (!key || keyExpired(key)) throw new Forbidden('The API key that started this import is no longer valid')
    return { userId: key.user_id, apiKeyOrganizationId: organizationId, apiKeyId: record.created_by_api_key_id, roles: new Map([[organizationId, key.role as Role]]) }
  }
  const member = await db('organizations_users').where({ organization_id: organizationId, user_id: record.created_by_user_id }).first('role')
  if (!member) throw new Forbidden('The member who started this import no longer belongs to the organization')
  return { userId: record.created_by_user_id, roles: new Map([[organizationId, member.role as Role]]) }
}

/** The plan of an import's chunks: its mapping over the organization's custom fields, as the importer. */
export async function planOf(app: Application, record: Omit<ImportRow, 'id' | 'status' | 'last_row' | 'file_key'>, caller: Caller): Promise<ChunkPlan> {
  const definitions = await loadDefinitions(app.get('knex'), [record.organization_id], entityOf(record.resource))
  const params: Params = { caller, authenticated: true, countsBatchBudget: true }
  return {
    app,
    resource: record.resource,
    organizationId: record.organization_id,
    keys: record.keys,
    read: rowReader(record.resource, record.columns, record.mapping, definitions),
    params
  }
}

/** The data rows of a file (the header is read when the import is created), in chunks. */
async function* chunksOf(app: Application, record: Pick<ImportRow, 'file_key' | 'encoding' | 'delimiter'>, after = 0): AsyncIterable<CsvRow[]> {
  let chunk: CsvRow[] = []
  const bytes = await app.get('storage').read(record.file_key)
  for await (const row of rowsOf(bytes, record)) {
    if (row.number <= after) continue
    chunk.push(row)
    if (chunk.length === CHUNK_ROWS) {
      yield chunk
      chunk = []
    }
  }
  if (chunk.length) yield chunk
}

/** The dry run of a whole file: counts and the first row errors, nothing written. */
export async function previewOf(app: Application, plan: ChunkPlan, record: Pick<ImportRow, 'file_key' | 'encoding' | 'delimiter'>): Promise<Preview> {
  const preview: Preview = { rows: 0, to_create: 0, to_update: 0, invalid: 0, companies_to_create: 0, errors: [] }
  const seen = new Set<string>()
  const companies = new Set<string>()
  for await (const chunk of chunksOf(app, record)) {
    const outcome = await importChunk(plan, chunk, undefined, seen)
    preview.rows += chunk.length
    preview.to_create += outcome.created
    preview.to_update += outcome.updated
    preview.invalid += outcome.failures.length
    for (const name of outcome.companiesCreated) companies.add(name)
    for (const failure of outcome.failures.sort((a, b) => a.row.number - b.row.number)) {
      if (preview.errors.length < PREVIEW_ERRORS) preview.errors.push({ row: failure.row.number, errors: failure.errors })
    }
  }
  preview.companies_to_create = companies.size
  return preview
}

/** The import's row, rendered as the API sends it, with its change announced once the transaction commits. */
async function announce(app: Application, trx: Knex, row: Record<string, unknown>, pending: { service: any; event: string; data: unknown }[]) {
  const service = app.service('imports') as any
  const [record] = await service.rendered([row], { transaction: { trx } })
  pending.push({ service, event: 'patched', data: record })
}

/** Changes the import outside a chunk (start, end, failure) and announces it. */
export async function changeImport(app: Application, record: Pick<ImportRow, 'organization_id' | 'id'>, changes: Record<string, unknown>, where: (query: Knex.QueryBuilder) => Knex.QueryBuilder = (q) => q) {
  const open = await openTransaction(app.get('knex'))
  try {
    const trx = open.params.transaction.trx
    const [row] = await where(trx('imports').where({ organization_id: record.organization_id, id: record.id })).update({ ...changes, updated_at: trx.fn.now() }).returning('*')
    if (row) await announce(app, trx, row, open.params.pendingEvents)
    await open.commit()
    return row as ImportRow | undefined
  } catch (error) {
    throw await open.rollback(error)
  }
}

/**
 * One chunk of a run, in one transaction: the import's row locked (a cancel or another worker
 * seen here), the rows imported, the failed ones kept, the counts and the last row recorded.
 * False when the import is no longer this run's to go on with.
 */
async function runChunk(app: Application, plan: ChunkPlan, importId: number, chunk: CsvRow[]): Promise<boolean> {
  const open = await openTransaction(app.get('knex'))
  try {
    const trx = open.params.transaction.trx
    const current = await trx('imports').where({ organization_id: plan.organizationId, id: importId }).forUpdate().first('status', 'last_row')
    if (!current || current.status !== 'running' || current.last_row !== chunk[0].number - 1) {
      await open.rollback(undefined)
      return false
    }
    const outcome: ChunkOutcome = await importChunk(plan, chunk, open.params)
    if (outcome.failures.length) {
      await trx('import_failures').insert(outcome.failures.map(({ row, errors }) => ({
        organization_id: plan.organizationId, import_id: importId, row_number: row.number, cells: JSON.stringify(row.cells), error: errorText(errors)
      })))
    }
    const [row] = await trx('imports').where({ organization_id: plan.organizationId, id: importId }).update({
      rows_read: trx.raw('rows_read + ?', [chunk.length]),
      rows_created: trx.raw('rows_created + ?', [outcome.created]),
      rows_updated: trx.raw('rows_updated + ?', [outcome.updated]),
      rows_failed: trx.raw('rows_failed + ?', [outcome.failures.length]),
      last_row: chunk[chunk.length - 1].number,
      updated_at: trx.fn.now()
    }).returning('*')
    await announce(app, trx, row, open.params.pendingEvents)
    await open.commit()
    app.get('outbox').kick()
    return true
  } catch (error) {
    throw await open.rollback(error)
  }
}

/** The outbox job of an import: queued → running → completed (or cancelled meanwhile), going on after the last committed row. */
export async function runImport(app: Application, job: OutboxJob<{ import_id: number }>): Promise<JobOutcome> {
  const db = app.get('knex')
  const stored: ImportRow | undefined = await db('imports').where({ organization_id: job.organization_id, id: job.payload.import_id }).first()
  if (!stored || !['queued', 'running'].includes(stored.status)) return { status: 'done', label: 'skipped' }
  const record = stored.status === 'queued'
    ? await changeImport(app, stored, { status: 'running', started_at: db.fn.now() }, (query) => query.where({ status: 'queued' }))
    : stored
  if (!record) return { status: 'done', label: 'skipped' }
  const importer = await importerOf(db, record).catch((error) => error as Forbidden)
  if (importer instanceof Forbidden) return { status: 'failed', error: importer.message }
  const plan = await planOf(app, record, importer)
  for await (const chunk of chunksOf(app, record, record.last_row)) {
    if (!(await runChunk(app, plan, record.id, chunk))) return { status: 'done', label: 'stopped' }
  }
  const finished = await changeImport(app, record, { status: 'completed', finished_at: db.fn.now() }, (query) => query.where({ status: 'running' }))
  if (finished) await app.get('storage').delete(record.file_key)
  return { status: 'done', label: finished ? 'imported' : 'stopped' }
}

/** The failed rows of an import as CSV: the file's columns and an error column, in row order. */
export async function* failuresCsv(db: Knex, record: Pick<ImportRow, 'organization_id' | 'id' | 'columns'>): AsyncIterable<string> {
  yield stringify([[...record.columns, 'error']])
  let after = 0
  for (;;) {
    const rows: { row_number: number; cells: string[]; error: string }[] = await db('import_failures')
      .where({ organization_id: record.organization_id, import_id: record.id }).where('row_number', '>', after)
      .orderBy('row_number').limit(FAILURES_PAGE).select('row_number', 'cells', 'error')
    if (rows.length) yield stringify(rows.map(({ cells, error }) => [...record.columns.map((_column, index) => escapeFormula(cells[index] ?? '')), escapeFormula(error)]))
    if (rows.length < FAILURES_PAGE) return
    after = rows[rows.length - 1].row_number
  }
}
