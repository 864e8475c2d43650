import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { BookingLinkService, getOptions } from './reservation-booking-links.class.js'
import {
  bookingLinkDataResolver, bookingLinkDataSchema, bookingLinkDataValidator, bookingLinkPatchResolver, bookingLinkPatchSchema, bookingLinkPatchValidator, bookingLinkQuerySchema, bookingLinkQueryValidator, bookingLinkSchema, checkServiceIds
} from './reservation-booking-links.schema.js'
import { bookingLinkMethods, bookingLinkPath } from './reservation-booking-links.shared.js'

export * from './reservation-booking-links.class.js'
export * from './reservation-booking-links.schema.js'

export const bookingLink = (app: Application) =>
  tenantResource(app, {
    path: bookingLinkPath,
    service: new BookingLinkService(getOptions(app)),
    methods: bookingLinkMethods,
    description: 'Public booking pages: a unique URL-safe slug (409 when taken), the services offered and page_config (logo_url and cover_url uploaded with POST /storage-url-signing).',
    schemas: { result: bookingLinkSchema, data: bookingLinkDataSchema, patch: bookingLinkPatchSchema, query: bookingLinkQuerySchema },
    validators: { query: bookingLinkQueryValidator, data: bookingLinkDataValidator, patch: bookingLinkPatchValidator },
    resolvers: { data: bookingLinkDataResolver, patch: bookingLinkPatchResolver },
    rules: { create: [checkServiceIds], patch: [checkServiceIds] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [bookingLinkPath]: BookingLinkService
  }
}
