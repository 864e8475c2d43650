import type { Application } from '../../../declarations.js'
import { checkTimeZone } from '../../../hooks/time-zone.js'
import { checkAmounts } from '../../../lib/money.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ReservationServiceService, getOptions } from './reservation-services.class.js'
import {
  reservationServiceDataResolver, reservationServiceDataSchema, reservationServiceDataValidator, reservationServicePatchSchema, reservationServicePatchValidator, reservationServiceQuerySchema, reservationServiceQueryValidator, reservationServiceSchema
} from './reservation-services.schema.js'
import { reservationServiceMethods, reservationServicePath } from './reservation-services.shared.js'

export * from './reservation-services.class.js'
export * from './reservation-services.schema.js'

const amounts = checkAmounts({ places: { price: 2 }, currencies: ['currency'] })

export const reservationService = (app: Application) =>
  tenantResource(app, {
    path: reservationServicePath,
    service: new ReservationServiceService(getOptions(app)),
    methods: reservationServiceMethods,
    description: 'Bookable services of an organization (duration, buffers, slot interval, notice and advance limits, time zone).',
    schemas: { result: reservationServiceSchema, data: reservationServiceDataSchema, patch: reservationServicePatchSchema, query: reservationServiceQuerySchema },
    validators: { query: reservationServiceQueryValidator, data: reservationServiceDataValidator, patch: reservationServicePatchValidator },
    resolvers: { data: reservationServiceDataResolver },
    rules: { create: [checkTimeZone, amounts], patch: [checkTimeZone, amounts] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [reservationServicePath]: ReservationServiceService
  }
}
