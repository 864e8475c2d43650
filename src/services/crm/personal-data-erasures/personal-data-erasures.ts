import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { PersonalDataErasureService, getOptions } from './personal-data-erasures.class.js'
import { personalDataErasureQuerySchema, personalDataErasureQueryValidator, personalDataErasureSchema } from './personal-data-erasures.schema.js'
import { personalDataErasureMethods, personalDataErasurePath } from './personal-data-erasures.shared.js'

export * from './personal-data-erasures.class.js'
export * from './personal-data-erasures.schema.js'

export const personalDataErasure = (app: Application) =>
  tenantResource(app, {
    path: personalDataErasurePath,
    service: new PersonalDataErasureService(getOptions(app)),
    methods: personalDataErasureMethods,
    description: 'The audit records of erased contacts (owners and admins), read only: who erased which contact id when, and how many records went. See docs/privacy.md.',
    schemas: { result: personalDataErasureSchema, query: personalDataErasureQuerySchema },
    validators: { query: personalDataErasureQueryValidator },
    roles: { all: ['owner', 'admin'] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [personalDataErasurePath]: PersonalDataErasureService
  }
}
