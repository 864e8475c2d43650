import { Type } from '@feathersjs/typebox'
import { Nullable } from '../schemas.js'

/**
 * A person's name, e-mail and phone as a contact stores them: the contacts' schema and the public
 * booking form (which finds or creates the contact) take them from here.
 */
export const personFields = {
  first_name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
  last_name: Nullable(Type.String({ maxLength: 200 })),
  email: Nullable(Type.String({ format: 'email', maxLength: 320 })),
  phone: Nullable(Type.String({
    maxLength: 50, pattern: '^[+]?[0-9 ().\\-/]*[0-9][0-9 ().\\-/]*$',
    description: 'stored as given; must be a valid number for its region (phone_country_iso, else phone_country_code) unless written with its country code, else 400 errors.phone'
  })),
  phone_country_code: Nullable(Type.String({ pattern: '^\\+[0-9]{1,4}$', description: "'+' and 1-4 digits, e.g. +44" })),
  phone_country_iso: Nullable(Type.String({ pattern: '^[A-Za-z]{2}$', description: "ISO 3166 alpha-2, stored upper-case: the region a national phone is read in" }))
}
