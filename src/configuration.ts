import { Type, getValidator, defaultAppConfiguration } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator } from './validators.js'

export const configurationSchema = Type.Intersect([
  defaultAppConfiguration,
  Type.Object({
    host: Type.String(),
    port: Type.Number(),
    public: Type.String(),
    publicUrl: Type.String(),
    appUrl: Type.String(),
    logLevel: Type.String(),
    dataDir: Type.String(),
    databaseUrl: Type.String(),
    databasePoolSize: Type.Number(),
    redisUrl: Type.String(),
    signupEnabled: Type.Boolean()
  })
])

export type ApplicationConfiguration = Static<typeof configurationSchema>

export const configurationValidator = getValidator(configurationSchema, dataValidator)
