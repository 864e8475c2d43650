import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { PersonalDataErasure, PersonalDataErasureQuery } from './personal-data-erasures.schema.js'

export type { PersonalDataErasure, PersonalDataErasureQuery }
export type PersonalDataErasureParams = KnexAdapterParams<PersonalDataErasureQuery>

/** The audit records of erasures (POST /contacts/:id, X-Service-Method: erase-personal-data): read only. */
export class PersonalDataErasureService extends RecordService<PersonalDataErasure, never, PersonalDataErasureParams> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'personal_data_erasures',
  softDelete: false
})
