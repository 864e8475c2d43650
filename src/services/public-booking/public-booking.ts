import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { limitPerAddress } from '../../rate-limit/per-address.js'
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

const json = (schema: unknown) => ({ content: { 'application/json': { schema: JSON.parse(JSON.stringify(schema)) } } })
const notFound = { 404: { description: 'No active booking link with this slug (or no reservation for this token)' } }
const tooMany = { 429: { description: 'Too many requests from this address' } }
const slugParam = { name: 'slug', in: 'path', required: true, schema: { type: 'string' } }
const publicOperation = (summary: string, operation: Record<string, unknown>) => ({ tags: ['public booking'], summary, security: [], ...operation })

const PATHS = {
  '/public/booking-links/{slug}': {
    get: publicOperation('A booking page: name, page_config and the services offered', {
      parameters: [slugParam],
      responses: { 200: { description: 'The page', ...json(publicBookingPageSchema) }, ...notFound, ...tooMany }
    })
  },
  '/public/booking-links/{slug}/slots': {
    get: publicOperation('Available slots of a service of the page on a date', {
      parameters: [slugParam, ...Object.entries(JSON.parse(JSON.stringify(publicSlotsQuerySchema)).properties).map(([name, schema]) => ({
        name, in: 'query', required: name !== 'party_size', schema
      }))],
      responses: { 200: { description: 'The slots', ...json(publicSlotsSchema) }, 400: { description: 'Invalid query or a service not offered here' }, ...notFound, ...tooMany }
    })
  },
  '/public/booking-links/{slug}/reservations': {
    post: publicOperation('Book: the contact is matched by e-mail or created; answers with a manage token', {
      parameters: [slugParam],
      requestBody: json(publicBookingDataSchema),
      responses: {
        201: { description: 'Booked (source booking_link)', ...json(publicBookingResultSchema) },
        400: { description: 'Invalid body' }, 409: { description: 'The time is not (or no longer) available' }, ...notFound, ...tooMany
      }
    })
  },
  '/public/reservations/{token}/cancel': {
    post: publicOperation('Cancel with the manage token (cancelled_by contact)', {
      parameters: [{ name: 'token', in: 'path', required: true, schema: { type: 'string' } }],
      requestBody: json(publicCancelDataSchema),
      responses: { 201: { description: 'Cancelled', ...json(publicReservationSchema) }, 400: { description: 'The reservation is completed or no_show' }, ...notFound, ...tooMany }
    })
  }
}

/** The reason is optional: no body or an empty one is a cancel without a reason. */
const noBodyIsEmpty = async (context: any) => {
  if (context.data === undefined || context.data === null || context.data === '') context.data = {}
}

/** The public booking routes: no credentials, rate limited per address, one organization's link at a time. */
export const publicBooking = (app: Application) => {
  const koa = { before: [limitPerAddress(app)] }
  app.use(publicPagePath, new PublicBookingPageService(app), {
    methods: ['get'], events: [], koa,
    docs: { description: 'Public booking pages', schemas: {}, paths: PATHS }
  } as any)
  app.use(publicSlotsPath, new PublicSlotsService(app), { methods: ['find'], events: [], koa } as any)
  app.use(publicBookingPath, new PublicBookingService(app), { methods: ['create'], events: [], koa } as any)
  app.use(publicCancelPath, new PublicCancelService(app), { methods: ['create'], events: [], koa } as any)

  app.service(publicSlotsPath).hooks({ before: { find: [schemaHooks.validateQuery(publicSlotsQueryValidator)] } })
  app.service(publicBookingPath).hooks({ before: { create: [schemaHooks.validateData(publicBookingDataValidator)] } })
  app.service(publicCancelPath).hooks({ before: { create: [noBodyIsEmpty, schemaHooks.validateData(publicCancelDataValidator)] } })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [publicPagePath]: PublicBookingPageService
    [publicSlotsPath]: PublicSlotsService
    [publicBookingPath]: PublicBookingService
    [publicCancelPath]: PublicCancelService
  }
}
