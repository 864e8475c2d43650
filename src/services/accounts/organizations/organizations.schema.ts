import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { RecordId, timestamps } from '../../../schemas.js'

export const organizationSchema = Type.Object(
  {
    id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    subscription_status: Type.String(),
    timezone: Type.String({ description: 'IANA time zone name, e.g. Europe/Madrid', default: 'UTC' }),
    deleted_retention_days: Type.Integer({
      minimum: 0, maximum: 3650,
      description: 'days deleted records are kept (listed with $withDeleted) before they are removed for good, files included; 0 keeps them forever. Default DELETED_RETENTION_DAYS (30); only owners change it. See docs/privacy.md'
    }),
    ...timestamps
  },
  { $id: 'Organization', additionalProperties: false }
)
export type Organization = Static<typeof organizationSchema>

export const organizationDataSchema = Type.Object(
  {
    name: organizationSchema.properties.name,
    timezone: Type.Optional(organizationSchema.properties.timezone),
    deleted_retention_days: Type.Optional(organizationSchema.properties.deleted_retention_days)
  },
  { $id: 'OrganizationData', additionalProperties: false }
)
export type OrganizationData = Static<typeof organizationDataSchema>
export const organizationDataValidator = getValidator(organizationDataSchema, dataValidator)

export const organizationPatchSchema = Type.Partial(organizationDataSchema, {
  $id: 'OrganizationPatch',
  additionalProperties: false
})
export type OrganizationPatch = Static<typeof organizationPatchSchema>
export const organizationPatchValidator = getValidator(organizationPatchSchema, dataValidator)

export const organizationQuerySchema = Type.Object(
  {
    $limit: Type.Optional(Type.Integer({ minimum: 0 })),
    $skip: Type.Optional(Type.Integer({ minimum: 0 })),
    $sort: Type.Optional(
      Type.Object(
        {
          id: Type.Optional(Type.Integer({ minimum: -1, maximum: 1 })),
          name: Type.Optional(Type.Integer({ minimum: -1, maximum: 1 })),
          created_at: Type.Optional(Type.Integer({ minimum: -1, maximum: 1 }))
        },
        { additionalProperties: false }
      )
    ),
    searchTerm: Type.Optional(Type.String({ minLength: 1, maxLength: 200 }))
  },
  { $id: 'OrganizationQuery', additionalProperties: false }
)
export type OrganizationQuery = Static<typeof organizationQuerySchema>
export const organizationQueryValidator = getValidator(organizationQuerySchema, queryValidator)
