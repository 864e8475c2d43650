import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { CustomField, CustomFieldData, CustomFieldPatch, CustomFieldQuery } from './custom-fields.schema.js'

export type { CustomField, CustomFieldData, CustomFieldPatch, CustomFieldQuery }
export type CustomFieldParams = KnexAdapterParams<CustomFieldQuery>

/** Custom field definitions; their values live on the records (see custom-field-values.ts). */
export class CustomFieldService extends RecordService<CustomField, CustomFieldData, CustomFieldParams, CustomFieldPatch> {
  /** Lists in display order (position, then id) unless the caller sorts. */
  async find(params: CustomFieldParams = {}): Promise<any> {
    const query = { ...(params.query ?? {}) }
    query.$sort ??= { position: 1 }
    return super._find({ ...params, query })
  }
}

export const getOptions = (app: Application) => ({
  paginate: { default: 10, max: 50 },
  Model: app.get('knex'),
  name: 'custom_fields'
})
