import type { Application } from '../../../declarations.js'
import { tenantOperation } from '../../../engine/tenant-operation.js'
import { AvailableSlotsService, getOptions } from './reservation-available-slots.class.js'
import { availableSlotsQuerySchema, availableSlotsQueryValidator, availableSlotsSchema } from './reservation-available-slots.schema.js'
import { availableSlotsMethods, availableSlotsPath } from './reservation-available-slots.shared.js'

export * from './reservation-available-slots.class.js'
export * from './reservation-available-slots.schema.js'

export const availableSlots = (app: Application) =>
  tenantOperation(app, {
    path: availableSlotsPath,
    service: new AvailableSlotsService(getOptions(app)),
    methods: availableSlotsMethods,
    summary: 'Available slots of a service on a date',
    description: "`date` is a calendar date in the service's time zone; starts step by slot_interval_minutes from the start of each availability window; " +
      'the buffered range must be free on every needed unit; nothing before now + min_notice or after now + max_advance_days. ' +
      'An inactive or deleted service → 400; a date without hours → empty data.',
    schemas: { result: availableSlotsSchema, query: availableSlotsQuerySchema },
    validators: { query: availableSlotsQueryValidator }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [availableSlotsPath]: AvailableSlotsService
  }
}
