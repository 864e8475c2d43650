import type { Application } from '../../../declarations.js'
import { checkTimeZone } from '../../../hooks/time-zone.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ReservationResourceService, getOptions } from './reservation-resources.class.js'
import {
  checkPersonUser, reservationResourceDataSchema, reservationResourceDataValidator, reservationResourcePatchSchema, reservationResourcePatchValidator, reservationResourceQuerySchema, reservationResourceQueryValidator, reservationResourceSchema
} from './reservation-resources.schema.js'
import { reservationResourceMethods, reservationResourcePath } from './reservation-resources.shared.js'

export * from './reservation-resources.class.js'
export * from './reservation-resources.schema.js'

export const reservationResource = (app: Application) =>
  tenantResource(app, {
    path: reservationResourcePath,
    service: new ReservationResourceService(getOptions(app)),
    methods: reservationResourceMethods,
    description: 'Bookable people, rooms and equipment; capacity is the number of units bookable at the same time.',
    schemas: { result: reservationResourceSchema, data: reservationResourceDataSchema, patch: reservationResourcePatchSchema, query: reservationResourceQuerySchema },
    validators: { query: reservationResourceQueryValidator, data: reservationResourceDataValidator, patch: reservationResourcePatchValidator },
    references: { user_id: { table: 'member' } },
    rules: { create: [checkTimeZone, checkPersonUser], patch: [checkTimeZone, checkPersonUser] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [reservationResourcePath]: ReservationResourceService
  }
}
