import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../../declarations.js'
import type { ServiceDocs } from '../../../openapi.js'
import { limitPerAddress } from '../../../rate-limit/per-address.js'
import { PublicBookingPageService, PublicBookingService, PublicCancelService, PublicSlotsService } from './public-booking.class.js'
import {
  publicBookingDataSchema, publicBookingDataValidator, publicBookingPageSchema, publicBookingResultSchema, publicCancelDataSchema,
  publicCancelDataValidator, publicReservationSchema, publicSlotsQuerySchema, publicSlotsQueryValidator, publicSlotsSchema
} from './public-booking.schema.js'

export * from './public-booking.class.js'
export * from './public-booking.schema.js'

export const publicPagePath = 'public/booking-links'
export const publicSlotsPath = 'public/booking-links/:slug/slots'
export const publicBookingPath = 'public/booking-links/:slug/reservations'
export const publicCancelPath = 'public/reservations/:token/cancel'

/** The reason is optional: no body or an empty one is a cancel without a reason. */
const noBodyIsEmpty = async (context: any) => {
  if (context.data === undefined || context.data === null || context.data === '') context.data = {}
}

/** The public booking routes: no credentials, rate limited per address, one organization's link at a time. */
export const publicBooking = (app: Application) => {
  // HTTP routes by nature (limited per client address by Koa middleware): refused over Socket.io (restOnly).
  const koa = { before: [limitPerAddress(app)] }
  const docs = (own: Omit<ServiceDocs, 'public'>) => ({ docs: { public: true, ...own, errors: { 404: 'No active booking link with this slug (or no reservation for this token)', ...own.errors } } })
  app.use(publicPagePath, new PublicBookingPageService(app), {
    methods: ['get'], events: [], koa, restOnly: true,
    ...docs({ noun: { one: 'booking page' }, id: { name: 'slug', schema: { type: 'string' } }, description: 'A booking page: name, page_config and the services offered.', schemas: { result: publicBookingPageSchema } })
  } as any)
  app.use(publicSlotsPath, new PublicSlotsService(app), {
    methods: ['find'], events: [], koa, restOnly: true,
    ...docs({ summary: 'Available slots of a service of the booking page on a date', schemas: { result: publicSlotsSchema, query: publicSlotsQuerySchema }, errors: { 400: 'Invalid query, or a service the page does not offer' } })
  } as any)
  app.use(publicBookingPath, new PublicBookingService(app), {
    methods: ['create'], events: [], koa, restOnly: true, secretFields: ['manage_token'],
    ...docs({
      summary: 'Book on a booking page: the contact is matched by e-mail or created; answers with a manage token',
      schemas: { data: publicBookingDataSchema, result: publicBookingResultSchema }, errors: { 409: 'The time is not (or no longer) available' }
    })
  } as any)
  app.use(publicCancelPath, new PublicCancelService(app), {
    methods: ['create'], events: [], koa, restOnly: true,
    ...docs({ summary: 'Cancel a reservation with its manage token (cancelled_by contact)', schemas: { data: publicCancelDataSchema, result: publicReservationSchema }, errors: { 400: 'The reservation is completed or no_show' } })
  } as any)

  app.service(publicSlotsPath).hooks({ before: { find: [schemaHooks.validateQuery(publicSlotsQueryValidator)] } })
  app.service(publicBookingPath).hooks({ before: { create: [schemaHooks.validateData(publicBookingDataValidator)] } })
  app.service(publicCancelPath).hooks({ before: { create: [noBodyIsEmpty, schemaHooks.validateData(publicCancelDataValidator)] } })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [publicPagePath]: PublicBookingPageService
    [publicSlotsPath]: PublicSlotsService
    [publicBookingPath]: PublicBookingService
    [publicCancelPath]: PublicCancelService
  }
}
