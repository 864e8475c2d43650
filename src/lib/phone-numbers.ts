import { BadRequest } from '@feathersjs/errors'
import { AsYouType, getCountryCallingCode, isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js'
import type { CountryCode } from 'libphonenumber-js'

/**
 * Phone numbers, read and written with libphonenumber-js (docs/contacts.md#phone-numbers). A
 * contact keeps the number as typed (phone) and its canonical E.164 form (phone_e164), which is
 * what SMS and WhatsApp send to, inbound senders and upserts match, duplicates share and phone
 * search looks in. A national number is read in the contact's region: its phone_country_iso,
 * else its phone_country_code.
 *
 * Validity is libphonenumber's default ("min") metadata: a number's length and leading digits
 * for its country, not the exact ranges allocated today, which change faster than a deployed
 * service is updated.
 */

/** The number and its region, as a contact (or a booking's contact, or a search) holds them. */
export interface PhoneFields {
  phone?: string | null
  phone_country_code?: string | null
  phone_country_iso?: string | null
}

/** What libphonenumber reads a national number with: the ISO country it knows, else the calling code. */
function regionOf(fields: PhoneFields): { defaultCountry?: CountryCode; defaultCallingCode?: string } {
  const iso = fields.phone_country_iso?.toUpperCase()
  if (iso && isSupportedCountry(iso)) return { defaultCountry: iso }
  const code = fields.phone_country_code?.replace(/\D/g, '')
  return code ? { defaultCallingCode: code } : {}
}

const regionName = (fields: PhoneFields) => fields.phone_country_iso?.toUpperCase() || fields.phone_country_code || undefined

/** The phone in E.164 when it is a valid number (in its region when written nationally); null otherwise, or without a phone. */
export function e164Of(fields: PhoneFields): string | null {
  if (!fields.phone?.trim()) return null
  const parsed = parsePhoneNumberFromString(fields.phone, regionOf(fields))
  return parsed?.isValid() ? parsed.number : null
}

/**
 * The phone in E.164 for a write (null without a phone), or a 400 naming `field` when it cannot
 * be a valid number: every write of a contact's phone goes through here.
 */
export function checkedE164(fields: PhoneFields, field = 'phone'): string | null {
  if (fields.phone === null || fields.phone === undefined) return null
  const e164 = e164Of(fields)
  if (e164) return e164
  const region = regionName(fields)
  const international = /^\s*\+/.test(fields.phone)
  const message = international || region
    ? `is not a valid phone number${international ? '' : ` for ${region}`}`
    : 'is a national number without a country: give phone_country_iso (or phone_country_code), or write it with its country code, e.g. +44 20 7946 0958'
  throw new BadRequest('Validation failed', { errors: { [field]: message } })
}

/**
 * A sender's number as a provider gives it (international, e.g. +447946095812): its E.164 form
 * and country, for matching and for a contact made from it. The carrier delivered from it, so
 * it is kept even when libphonenumber's metadata does not know its range yet.
 */
export function senderPhone(phone: string): { phone_e164: string; phone_country_code: string | null; phone_country_iso: string | null } | null {
  const digits = phone.replace(/\D/g, '')
  if (!digits) return null
  const parsed = parsePhoneNumberFromString(`+${digits}`)
  return {
    phone_e164: parsed?.number ?? `+${digits}`,
    phone_country_code: parsed ? `+${parsed.countryCallingCode}` : null,
    phone_country_iso: parsed?.country ?? null
  }
}

/**
 * A phone search term, complete or not, as the E.164 numbers it is looked for in: the calling
 * code (the term's own when written internationally, with + or the region's international
 * prefix such as 00, else the region's) and the national digits typed, without a trunk prefix
 * (the 0 of 020 7946), spaces or punctuation.
 */
export function searchedNumber(term: string, region: PhoneFields): { callingCode: string; nationalDigits: string } {
  const defaults = regionOf(region)
  const typed = new AsYouType(defaults)
  typed.input(term)
  const callingCode = typed.getCallingCode()
    ?? (defaults.defaultCountry ? getCountryCallingCode(defaults.defaultCountry) : defaults.defaultCallingCode ?? '')
  return { callingCode: `+${callingCode}`, nationalDigits: typed.getNationalNumber() }
}
