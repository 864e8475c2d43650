import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { storeCustomFieldValues } from '../custom-fields/custom-field-values.js'
import { ReservationService, getOptions } from './reservations.class.js'
import {
  reservationDataResolver, reservationDataSchema, reservationDataValidator, reservationExternalResolver, reservationPatchSchema,
  reservationPatchValidator, reservationQuerySchema, reservationQueryValidator, reservationResolver, reservationSchema
} from './reservations.schema.js'
import { reservationMethods, reservationPath } from './reservations.shared.js'

export * from './reservations.class.js'
export * from './reservations.schema.js'

const references = verifyReferences({
  service_id: { table: 'reservation_services', label: 'reservation service' },
  contact_id: { table: 'contacts' },
  resource_id: { table: 'reservation_resources', label: 'reservation resource' },
  deal_id: { table: 'deals' },
  company_id: { table: 'companies' }
})
const customFields = storeCustomFieldValues('reservation', 'key')
const resolvers = [schemaHooks.resolveExternal(reservationExternalResolver), schemaHooks.resolveResult(reservationResolver)]

export const reservation = (app: Application) => {
  app.use(reservationPath, new ReservationService(getOptions(app)), {
    methods: reservationMethods,
    events: [],
    docs: {
      description: 'Reservations. Create takes a start offered by /reservation-available-slots (409 otherwise, naming the reason); ' +
        'status moves pending → confirmed | cancelled, confirmed → cancelled | completed | no_show (final states → 400); ' +
        'PATCH start_datetime (and resource_id) reschedules atomically (409 leaves it unchanged).',
      schemas: { result: reservationSchema, data: reservationDataSchema, patch: reservationPatchSchema, query: reservationQuerySchema }
    }
  } as any)
  app.service(reservationPath).hooks({
    around: {
      all: [authenticated, ...resolvers]
    },
    before: {
      all: [schemaHooks.validateQuery(reservationQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(reservationDataValidator), references, customFields, schemaHooks.resolveData(reservationDataResolver)],
      patch: [schemaHooks.validateData(reservationPatchValidator), references, customFields]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [reservationPath]: ReservationService
  }
}
