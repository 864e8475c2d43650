import { BadRequest } from '@feathersjs/errors'
import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'
import { targetOrganization } from '../../../hooks/tenant-scope.js'
import { databaseOf } from '../../../db.js'

const ImageUrl = (type: string) =>
  Nullable(Type.String({ format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', maxLength: 2000, description: `public URL from POST /storage-url-signing (type ${type})` }))

export const pageConfigSchema = Type.Object(
  {
    title: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    description: Type.Optional(Nullable(Type.String({ maxLength: 5000 }))),
    logo_url: Type.Optional(ImageUrl('booking-link-logo')),
    cover_url: Type.Optional(ImageUrl('booking-link-cover')),
    primary_color: Type.Optional(Nullable(Type.String({ pattern: '^#[0-9A-Fa-f]{6}$', description: '#RRGGBB' }))),
    welcome_message: Type.Optional(Nullable(Type.String({ maxLength: 2000 })))
  },
  { $id: 'BookingLinkPageConfig', additionalProperties: false }
)

export const bookingLinkSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    slug: Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', description: 'URL-safe, unique across organizations: /public/booking-links/<slug>' }),
    name: Type.String({ minLength: 1, maxLength: 300 }),
    service_ids: Type.Array(RecordId, { uniqueItems: true, maxItems: 100, description: 'reservation services offered on the page' }),
    is_active: Type.Boolean(),
    page_config: pageConfigSchema,
    created_by_user_id: Nullable(RecordId),
    ...softDeleteTimestamps
  },
  { $id: 'ReservationBookingLink', additionalProperties: false }
)
export type BookingLink = Static<typeof bookingLinkSchema>

const p = bookingLinkSchema.properties
const changeable = {
  name: p.name,
  service_ids: Type.Optional(p.service_ids),
  is_active: Type.Optional(p.is_active),
  page_config: Type.Optional(p.page_config)
}

export const bookingLinkDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), slug: p.slug, ...changeable },
  { $id: 'ReservationBookingLinkData', additionalProperties: false }
)
export type BookingLinkData = Static<typeof bookingLinkDataSchema>
export const bookingLinkDataValidator = getValidator(bookingLinkDataSchema, dataValidator)

export const bookingLinkPatchSchema = Type.Partial(Type.Object({ slug: p.slug, ...changeable }), { $id: 'ReservationBookingLinkPatch', additionalProperties: false })
export type BookingLinkPatch = Static<typeof bookingLinkPatchSchema>
export const bookingLinkPatchValidator = getValidator(bookingLinkPatchSchema, dataValidator)

/** Arrays and objects go to Postgres as literals that both pg and PGlite take. */
const storage = {
  service_ids: async (value: unknown) => (Array.isArray(value) ? `{${value.join(',')}}` : value),
  page_config: async (value: unknown) => (value === undefined ? value : JSON.stringify(value))
}
export const bookingLinkDataResolver = resolve<any, HookContext>({
  ...storage,
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null
})
export const bookingLinkPatchResolver = resolve<any, HookContext>(storage)

export const bookingLinkQuerySchema = Type.Object(
  { ...listQuery(bookingLinkSchema, ['organization_id', 'slug', 'name', 'is_active', 'created_at', 'updated_at'], { operators: { name: { $ilike: Type.String() } } }).properties },
  { $id: 'ReservationBookingLinkQuery', additionalProperties: false }
)
export type BookingLinkQuery = Static<typeof bookingLinkQuerySchema>
export const bookingLinkQueryValidator = getValidator(bookingLinkQuerySchema, queryValidator)

/** Every id of service_ids is a live reservation service of the link's organization (one query). */
export const checkServiceIds = async (context: HookContext) => {
  const ids = (context.data as BookingLinkPatch).service_ids
  if (!ids?.length) return context
  const organizationId = await targetOrganization(context)
  const found = await databaseOf(context.params, context.app.get('knex'))('reservation_services')
    .where('organization_id', organizationId).whereIn('id', ids).whereNull('deleted_at').pluck('id')
  const missing = ids.filter((id) => !found.includes(id))
  if (missing.length) {
    throw new BadRequest('Invalid reference', { errors: { service_ids: `must be reservation services of this organization (not ${missing.join(', ')})` } })
  }
  return context
}
