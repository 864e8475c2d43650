import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { AvailableSlotsService, getOptions } from './reservation-available-slots.class.js'
import { availableSlotsQuerySchema, availableSlotsQueryValidator, availableSlotsSchema } from './reservation-available-slots.schema.js'
import { availableSlotsMethods, availableSlotsPath } from './reservation-available-slots.shared.js'

export * from './reservation-available-slots.class.js'
export * from './reservation-available-slots.schema.js'

const json = (schema: unknown) => ({ content: { 'application/json': { schema: JSON.parse(JSON.stringify(schema)) } } })

export const availableSlots = (app: Application) => {
  app.use(availableSlotsPath, new AvailableSlotsService(getOptions(app)), {
    methods: availableSlotsMethods,
    events: [],
    docs: {
      description: 'Available slots of a service on a date.',
      schemas: { result: availableSlotsSchema, query: availableSlotsQuerySchema },
      paths: {
        [`/${availableSlotsPath}`]: {
          get: {
            tags: [availableSlotsPath],
            summary: 'Available slots of a service on a date',
            description: "`date` is a calendar date in the service's time zone; starts step by slot_interval_minutes from the start of each availability window; " +
              'the buffered range must be free on every needed unit; nothing before now + min_notice or after now + max_advance_days. ' +
              'An inactive or deleted service → 400; a date without hours → empty data.',
            parameters: Object.entries(JSON.parse(JSON.stringify(availableSlotsQuerySchema)).properties).map(([name, schema]) => ({
              name, in: 'query', required: name === 'service_id' || name === 'date', schema
            })),
            responses: { 200: { description: 'The slots', ...json(availableSlotsSchema) }, 400: { description: 'Invalid query or service' } }
          }
        }
      }
    }
  } as any)
  app.service(availableSlotsPath).hooks({
    around: { all: [authenticated] },
    before: { all: [schemaHooks.validateQuery(availableSlotsQueryValidator), scopeToTenant()] }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [availableSlotsPath]: AvailableSlotsService
  }
}
