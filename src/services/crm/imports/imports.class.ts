import fs from 'node:fs'
import { BadRequest, Conflict, NotFound } from '@feathersjs/errors'
import type { Id } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import { nanoid } from 'nanoid'
import type { Application } from '../../../declarations.js'
import { fieldError } from '../../../hooks/errors.js'
import { idOfPath } from '../../../hooks/custom-method-id.js'
import { emitAfterCommit, inTransaction } from '../../../hooks/deferred-events.js'
import { loadDefinitions } from '../../../hooks/custom-field-values.js'
import { RecordService } from '../../../engine/record-service.js'
import type { RecordServiceOptions } from '../../../engine/record-service.js'
import { CsvAnswer } from '../../../engine/csv-export.js'
import { enqueueJob } from '../../../outbox/index.js'
import { PRIVATE_FOLDER } from '../../../storage/storage.js'
import { requestLog } from '../../../logger.js'
import { rowsOf, sniffDelimiter } from './csv-file.js'
import type { Encoding } from './csv-file.js'
import { checkMapping, entityOf, proposeMapping, targetsOf } from './mapping.js'
import type { ImportedResource, Mapping } from './mapping.js'
import { IMPORT_TOPIC, failuresCsv, planOf, previewOf } from './run.js'
import type { ImportRow } from './run.js'
import type { Import, ImportAction, ImportData, ImportPatch, ImportQuery } from './imports.schema.js'

export type { Import, ImportAction, ImportData, ImportPatch, ImportQuery }
export type ImportParams = KnexAdapterParams<ImportQuery>

declare module '@feathersjs/feathers' {
  interface Params {
    /** GET /imports/:id asked for CSV: its failed rows are the answer. */
    failuresCsv?: boolean
  }
}

/** The longest header the service reads. */
const MAX_COLUMNS = 500

/**
 * Imports of CSV files (docs/import-export.md): create stores the upload and answers the proposed
 * mapping with its preview; patch changes the mapping or keys of a previewed import (previewed
 * again); start queues the run, an outbox job (src/services/crm/imports/run.ts); cancel stops it at its next chunk.
 */
export class ImportService extends RecordService<Import, ImportData, ImportParams, ImportPatch> {
  constructor(options: RecordServiceOptions, private app: Application) {
    super(options)
  }

  /** GET /imports/:id with Accept: text/csv: the failed rows, each with its error. */
  async get(id: Id, params: ImportParams = {}): Promise<any> {
    if (!params.failuresCsv) return super.get(id, params)
    const record = await super.get(id, { ...params, read: { ...params.read, rendered: false } } as ImportParams)
    return new CsvAnswer(failuresCsv(this.knex, record as Import), `import-${record.id}-failures.csv`)
  }

  async create(data: any, params: ImportParams = {}): Promise<any> {
    const body = data as ImportData
    const upload = params.upload
    if (!upload) throw new BadRequest('Validation failed', { errors: { file: 'is required: send multipart/form-data with a file field' } })
    const organizationId = body.organization_id!
    const encoding: Encoding = body.encoding ?? 'utf8'
    const delimiter = body.delimiter === 'tab' ? '\t' : body.delimiter ?? (await sniffDelimiter(upload.path, encoding))
    const columns = await headerOf(upload.path, encoding, delimiter)
    const definitions = await loadDefinitions(this.knex, [organizationId], entityOf(body.resource))
    const proposed = proposeMapping(body.resource, columns, definitions)
    const mapping = body.mapping === undefined ? proposed : checkMapping(parsedJson(body.mapping, 'mapping'), columns, targetsOf(body.resource, definitions), proposed)
    const keys = checkKeys(this.app, body.resource, body.keys === undefined ? [] : body.keys.split(',').map((key) => key.trim()).filter(Boolean))
    const key = `${organizationId}/${PRIVATE_FOLDER}/${nanoid()}.csv`
    const storage = this.app.get('storage')
    await storage.put(key, fs.createReadStream(upload.path), { contentType: 'text/csv', size: upload.size })
    try {
      const record = {
        organization_id: organizationId, resource: body.resource, file_name: upload.name, file_size: upload.size, file_key: key,
        encoding, delimiter, columns, mapping, keys,
        created_by_user_id: params.caller!.userId, created_by_api_key_id: params.caller!.apiKeyId ?? null
      }
      const preview = await previewOf(this.app, await planOf(this.app, record, params.caller!), record)
      return await this._create({ ...record, columns: JSON.stringify(columns), mapping: JSON.stringify(mapping), keys: JSON.stringify(keys), preview: JSON.stringify(preview) }, params)
    } catch (error) {
      await storage.delete(key).catch((cleanup) => requestLog(this.app.get('logger'), params.requestId).error({ err: cleanup, key }, 'orphan import file not removed'))
      throw error
    }
  }

  /** Another mapping or other keys for a previewed import: checked, and the file previewed again. */
  async patch(id: Id | null, data: ImportPatch, params: ImportParams = {}): Promise<any> {
    const stored = (await this.storedRow(id!, params)) as unknown as ImportRow
    if (stored.status !== 'previewed') throw new Conflict(`The import is ${stored.status}: only a previewed import takes another mapping or keys`)
    const definitions = await loadDefinitions(this.knex, [stored.organization_id], entityOf(stored.resource))
    const mapping: Mapping = data.mapping === undefined ? stored.mapping : checkMapping(data.mapping, stored.columns, targetsOf(stored.resource, definitions), stored.mapping)
    const keys = data.keys === undefined ? stored.keys : checkKeys(this.app, stored.resource, data.keys)
    const record = { ...stored, mapping, keys }
    const preview = await previewOf(this.app, await planOf(this.app, record, params.caller!), record)
    return this._patch(id, { mapping: JSON.stringify(mapping), keys: JSON.stringify(keys), preview: JSON.stringify(preview) } as any, params)
  }

  /** POST /imports/:id, X-Service-Method: start: the run is queued (an outbox job written with the change). */
  async start(data: ImportAction, params: ImportParams = {}): Promise<Import> {
    return this.changeStatus(data, params, ['previewed'], { status: 'queued' }, true)
  }

  /** POST /imports/:id, X-Service-Method: cancel: a run stops before its next chunk; the rows imported stay. */
  async cancel(data: ImportAction, params: ImportParams = {}): Promise<Import> {
    const record = await this.changeStatus(data, params, ['previewed', 'queued', 'running'], { status: 'cancelled', finished_at: this.knex.fn.now() }, false)
    await this.app.get('storage').delete((await this.knex('imports').where({ organization_id: record.organization_id, id: record.id }).first('file_key')).file_key)
    return record
  }

  private async changeStatus(data: ImportAction, params: ImportParams, from: string[], changes: Record<string, unknown>, queue: boolean): Promise<Import> {
    const id = idOfPath(params, data)
    const organizationId = data.organization_id!
    const record = await inTransaction(this.knex, async (inside) => {
      const trx = inside.transaction.trx
      const stored = await trx('imports').where({ organization_id: organizationId, id }).whereNull('deleted_at').forUpdate().first('status')
      if (!stored) throw new NotFound(`No record found for id '${id}'`)
      if (!from.includes(stored.status)) throw new Conflict(`The import is ${stored.status}`)
      const [row] = await trx('imports').where({ organization_id: organizationId, id }).update({ ...changes, updated_at: trx.fn.now() }).returning('*')
      if (queue) await enqueueJob(trx, { topic: IMPORT_TOPIC, kind: row.resource, organizationId, payload: { import_id: id }, orderingKey: `import:${organizationId}:${id}` })
      const [rendered] = await this.rendered([row], inside)
      emitAfterCommit(inside, this.app.service('imports') as any, 'patched', rendered)
      return rendered
    })
    if (queue) this.app.get('outbox').kick()
    return record
  }
}

/** The header of the uploaded file: at least one column, at most MAX_COLUMNS, each named once. */
async function headerOf(file: string, encoding: Encoding, delimiter: string): Promise<string[]> {
  for await (const { cells } of rowsOf(fs.createReadStream(file), { encoding, delimiter })) {
    const columns = cells.map((cell) => cell.trim())
    if (columns.length > MAX_COLUMNS) throw fieldError('file', `has ${columns.length} columns: at most ${MAX_COLUMNS}`)
    const repeated = columns.find((column, index) => columns.indexOf(column) !== index)
    if (repeated !== undefined) throw fieldError('file', `names the column "${repeated}" twice in its header`)
    return columns
  }
  throw fieldError('file', 'is empty: the first line must be the header')
}

function parsedJson(text: string, field: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw fieldError(field, 'must be JSON')
  }
}

/** Keys the resource's upsert matches by, named once each. */
function checkKeys(app: Application, resource: ImportedResource, keys: string[]): string[] {
  const known = Object.keys((app.service(resource) as any).options.upsertKeys ?? {})
  for (const key of keys) if (!known.includes(key)) throw fieldError('keys', `must be among: ${known.join(', ')}`)
  if (new Set(keys).size !== keys.length) throw fieldError('keys', 'names a key twice')
  return keys
}

export const getOptions = (app: Application): RecordServiceOptions => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'imports'
})
