import { Ajv, addFormats } from '@feathersjs/schema'
import type { FormatsPluginOptions } from '@feathersjs/schema'

const formats: FormatsPluginOptions = [
  'date-time',
  'time',
  'date',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uri',
  'uri-reference',
  'uuid',
  'uri-template',
  'json-pointer',
  'relative-json-pointer',
  'regex'
]

// Bodies are validated strictly: no coercion, unknown properties rejected by the schemas themselves.
export const dataValidator: Ajv = addFormats(new Ajv({ allErrors: true }), formats)

// Query strings are text, so query validation coerces ("10" -> 10, "true" -> true).
export const queryValidator: Ajv = addFormats(
  new Ajv({ allErrors: true, coerceTypes: true }),
  formats
)
