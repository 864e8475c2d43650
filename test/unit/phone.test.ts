import { describe, expect, it } from 'vitest'
import { e164Of } from '../../src/channels/contacts.js'
import { normalizePhone } from '../../src/services/contacts/contacts.class.js'
import { contactDataValidator } from '../../src/services/contacts/contacts.schema.js'

// What phone search compares (phone_normalized) and what SMS and WhatsApp send to (E.164).
describe('phone normalisation', () => {
  it.each([
    ['+44 20 7946 0958', '+44', '2079460958'],
    ['+44-20-7946-0958', '+44', '2079460958'],
    ['0044 20 7946 0958', '+44', '2079460958'],
    ['  +1 (555) 010-4477  ', '+1', '5550104477'],
    ['+1.555.010.4477', '+1', '5550104477'],
    ['0034/612/345/678', '+34', '612345678']
  ])('when %j is written with the international prefix of its country %s, then the prefix and country code go: %s', (phone, code, digits) => {
    expect(normalizePhone(phone, code)).toBe(digits)
  })

  it.each([
    ['20 7946 0958', '+44', '2079460958'],
    ['(555) 010-4477', '+1', '5550104477'],
    ['020 7946 0958', '+44', '02079460958'],
    ['44 20 7946 0958', '+44', '442079460958']
  ])('when %j is written without an international prefix, then every digit stays, even ones that look like the country code: %s', (phone, code, digits) => {
    expect(normalizePhone(phone, code)).toBe(digits)
  })

  it('when the number is international in another country than the contact\'s, or there is no country code, then only the prefix goes', () => {
    expect(normalizePhone('+33 1 23 45 67 89', '+44')).toBe('33123456789')
    expect(normalizePhone('0033 1 23 45 67 89', null)).toBe('33123456789')
    expect(normalizePhone('+1 555 010 4477', undefined)).toBe('15550104477')
  })

  it('when the country code repeats after the prefix (+44 44 …), then it goes once', () => {
    expect(normalizePhone('+44 44 1234 5678', '+44')).toBe('4412345678')
  })

  it('when there is no phone or no digit in it, then null', () => {
    expect([null, undefined, '', '   ', '+', '00', '+44', '( ) -'].map((phone) => normalizePhone(phone, '+44'))).toEqual([
      null, null, null, null, null, null, null, null
    ])
  })
})

describe('phone in E.164', () => {
  const contact = (phone: string | null, code: string | null) => ({ phone, phone_country_code: code, phone_normalized: normalizePhone(phone, code) })

  it('when a contact has a country code, then E.164 is + code digits, whether the number was written with the prefix or not', () => {
    expect(e164Of(contact('+44 20 7946 0958', '+44'))).toBe('+442079460958')
    expect(e164Of(contact('0044 20 7946 0958', '+44'))).toBe('+442079460958')
    expect(e164Of(contact('20 7946 0958', '+44'))).toBe('+442079460958')
    expect(e164Of(contact('(555) 010-4477', '+1'))).toBe('+15550104477')
  })

  it('when a number is international but the contact has no country code, then E.164 is its own digits', () => {
    expect(e164Of(contact('+33 1 23 45 67 89', null))).toBe('+33123456789')
    expect(e164Of(contact('0033 1 23 45 67 89', null))).toBe('+33123456789')
  })

  it('when a national number has no country code, or there is no phone, then null', () => {
    expect(e164Of(contact('020 7946 0958', null))).toBeNull()
    expect(e164Of(contact(null, '+44'))).toBeNull()
    expect(e164Of(contact('+', '+44'))).toBeNull()
  })
})

describe('phone validation', () => {
  /** The JSON pointers of the fields a contact body fails on (Ajv's errors), or [] when valid. */
  const invalidFields = async (data: Record<string, unknown>) => {
    try {
      await contactDataValidator({ first_name: 'Ada', ...data })
      return []
    } catch (error: any) {
      return [...new Set((error.errors as { instancePath: string }[]).map((problem) => problem.instancePath))]
    }
  }

  it.each(['+44 20 7946 0958', '0044 (20) 7946-0958', '020/7946.0958', '5', '+1 (555) 010-4477'])('when the phone is %j, then it is accepted as written', async (phone) => {
    expect(await invalidFields({ phone })).toEqual([])
  })

  it.each(['call me', '+', '++44 20 7946 0958', '44 20 7946 0958 ext. 12', '+44 20 7946 0958#', '1'.repeat(51), '٤٤٢٠٧٩٤٦'])('when the phone is %j, then it is refused', async (phone) => {
    expect(await invalidFields({ phone })).toEqual(['/phone'])
  })

  it.each(['44', '+', '+12345', '+4 4'])('when the country code is %j, then it is refused', async (phone_country_code) => {
    expect(await invalidFields({ phone_country_code })).toEqual(['/phone_country_code'])
  })
})
