import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { checkTimeZone } from '../../reservations/fields.js'
import { ReservationResourceService, getOptions } from './reservation-resources.class.js'
import {
  checkPersonUser, reservationResourceDataSchema, reservationResourceDataValidator, reservationResourcePatchSchema,
  reservationResourcePatchValidator, reservationResourceQuerySchema, reservationResourceQueryValidator, reservationResourceResolver,
  reservationResourceSchema
} from './reservation-resources.schema.js'
import { reservationResourceMethods, reservationResourcePath } from './reservation-resources.shared.js'

export * from './reservation-resources.class.js'
export * from './reservation-resources.schema.js'

const references = verifyReferences({ user_id: { table: 'member' } })

export const reservationResource = (app: Application) => {
  app.use(reservationResourcePath, new ReservationResourceService(getOptions(app)), {
    methods: reservationResourceMethods,
    events: [],
    docs: {
      description: 'Bookable people, rooms and equipment; capacity is the number of units bookable at the same time.',
      schemas: { result: reservationResourceSchema, data: reservationResourceDataSchema, patch: reservationResourcePatchSchema, query: reservationResourceQuerySchema }
    }
  } as any)
  app.service(reservationResourcePath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(reservationResourceResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(reservationResourceQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(reservationResourceDataValidator), checkTimeZone, checkPersonUser, references],
      patch: [schemaHooks.validateData(reservationResourcePatchValidator), checkTimeZone, checkPersonUser, references]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [reservationResourcePath]: ReservationResourceService
  }
}
