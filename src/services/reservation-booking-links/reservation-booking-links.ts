import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { BookingLinkService, getOptions } from './reservation-booking-links.class.js'
import {
  bookingLinkDataResolver, bookingLinkDataSchema, bookingLinkDataValidator, bookingLinkPatchResolver, bookingLinkPatchSchema,
  bookingLinkPatchValidator, bookingLinkQuerySchema, bookingLinkQueryValidator, bookingLinkResolver, bookingLinkSchema, checkServiceIds
} from './reservation-booking-links.schema.js'
import { bookingLinkMethods, bookingLinkPath } from './reservation-booking-links.shared.js'

export * from './reservation-booking-links.class.js'
export * from './reservation-booking-links.schema.js'

export const bookingLink = (app: Application) => {
  app.use(bookingLinkPath, new BookingLinkService(getOptions(app)), {
    methods: bookingLinkMethods,
    events: [],
    docs: {
      description: 'Public booking pages: a unique URL-safe slug (409 when taken), the services offered and page_config (logo_url and cover_url uploaded with POST /storage-url-signing).',
      schemas: { result: bookingLinkSchema, data: bookingLinkDataSchema, patch: bookingLinkPatchSchema, query: bookingLinkQuerySchema }
    }
  } as any)
  app.service(bookingLinkPath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(bookingLinkResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(bookingLinkQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(bookingLinkDataValidator), checkServiceIds, schemaHooks.resolveData(bookingLinkDataResolver)],
      patch: [schemaHooks.validateData(bookingLinkPatchValidator), checkServiceIds, schemaHooks.resolveData(bookingLinkPatchResolver)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [bookingLinkPath]: BookingLinkService
  }
}
