import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { RELATIONS, ReservationService, getOptions } from './reservations.class.js'
import {
  reservationDataResolver, reservationDataSchema, reservationDataValidator, reservationPatchSchema,
  reservationPatchValidator, reservationQuerySchema, reservationQueryValidator, reservationSchema
} from './reservations.schema.js'
import { reservationMethods, reservationPath } from './reservations.shared.js'

export * from './reservations.class.js'
export * from './reservations.schema.js'

export const reservation = (app: Application) =>
  tenantResource(app, {
    path: reservationPath,
    service: new ReservationService(getOptions(app)),
    methods: reservationMethods,
    description: 'Reservations. Create takes a start offered by /reservation-available-slots (409 otherwise, naming the reason); ' +
      'status moves pending → confirmed | cancelled, confirmed → cancelled | completed | no_show (final states → 400); ' +
      'PATCH start_datetime (and resource_id) reschedules atomically (409 leaves it unchanged).',
    schemas: { result: reservationSchema, data: reservationDataSchema, patch: reservationPatchSchema, query: reservationQuerySchema },
    validators: { query: reservationQueryValidator, data: reservationDataValidator, patch: reservationPatchValidator },
    resolvers: { data: reservationDataResolver },
    hidden: ['manage_token_hash'],
    references: {
      service_id: { table: 'reservation_services', label: 'reservation service' },
      contact_id: { table: 'contacts' },
      resource_id: { table: 'reservation_resources', label: 'reservation resource' },
      deal_id: { table: 'deals' },
      company_id: { table: 'companies' }
    },
    customFields: { entity: 'reservation', by: 'key' },
    joins: { flag: 'fastJoinForReservationList', list: RELATIONS, record: RELATIONS }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [reservationPath]: ReservationService
  }
}
