import { describe, expect, it } from 'vitest'
import { checkedE164, e164Of, searchedNumber, senderPhone } from '../../src/lib/phone-numbers.js'
import { contactDataValidator } from '../../src/services/crm/contacts/contacts.schema.js'

// libphonenumber-js reads a contact's phone in its region: E.164 is what is stored, sent to and matched on.
describe('phone numbers in E.164', () => {
  it.each([
    ['020 7946 0958', 'GB', null, '+442079460958'],
    ['020 7946 0958', null, '+44', '+442079460958'],
    ['20 7946 0958', 'gb', '+44', '+442079460958'],
    ['+44 (0)20 7946 0958', 'GB', '+44', '+442079460958'],
    ['0044 20 7946 0958', 'GB', null, '+442079460958'],
    ['(212) 555-0101', 'US', '+1', '+12125550101'],
    ['011 44 20 7946 0958', 'US', '+1', '+442079460958'],
    ['600 111 222', 'ES', '+34', '+34600111222'],
    ['+33 1 23 45 67 89', 'GB', '+44', '+33123456789']
  ])('when %j is read in %s/%s, then it is %s (the trunk 0 goes; a number written internationally keeps its own country)', (phone, iso, code, e164) => {
    expect(e164Of({ phone, phone_country_iso: iso, phone_country_code: code })).toBe(e164)
  })

  it('when a number cannot be valid for its region, or a national number has no region, then it has no E.164 form', () => {
    expect(e164Of({ phone: '123', phone_country_iso: 'GB' })).toBeNull()
    expect(e164Of({ phone: '555 0100', phone_country_iso: 'US' })).toBeNull()
    expect(e164Of({ phone: '+33 1 23 45 67' })).toBeNull()
    expect(e164Of({ phone: '020 7946 0958' })).toBeNull()
    expect(e164Of({ phone: null, phone_country_iso: 'GB' })).toBeNull()
  })

  it('when a write carries an invalid number, then 400 names the field and says why', () => {
    const refusal = (fields: Record<string, string>, field?: string) => {
      try {
        checkedE164(fields, field)
      } catch (error: any) {
        return { code: error.code, errors: error.errors }
      }
      throw new Error('accepted')
    }
    expect(refusal({ phone: '123', phone_country_iso: 'GB' })).toEqual({ code: 400, errors: { phone: 'is not a valid phone number for GB' } })
    expect(refusal({ phone: '+1 555 0100' }, 'contact.phone')).toEqual({ code: 400, errors: { 'contact.phone': 'is not a valid phone number' } })
    expect(refusal({ phone: '020 7946 0958' }).errors.phone).toMatch(/^is a national number without a country: give phone_country_iso/)
    expect(checkedE164({ phone: null, phone_country_iso: 'GB' })).toBeNull()
  })

  it("when a provider gives a sender's number, then it is E.164 with its country, even where the metadata does not know the range", () => {
    expect(senderPhone('+447946095812')).toEqual({ phone_e164: '+447946095812', phone_country_code: '+44', phone_country_iso: 'GB' })
    expect(senderPhone('16505550199')).toEqual({ phone_e164: '+16505550199', phone_country_code: '+1', phone_country_iso: 'US' })
    expect(senderPhone('+10123456789')).toMatchObject({ phone_e164: '+10123456789', phone_country_code: '+1' })
    expect(senderPhone('+')).toBeNull()
  })

  it.each([
    ['020 7946', '+44', '207946'],
    ['+44 20 7946 09', '+44', '20794609'],
    ['0044 20 79', '+44', '2079'],
    ['7946 0958', '+44', '79460958'],
    ['+1 212 555', '+1', '212555'],
    ['0', '+44', '']
  ])('when phone search gets %j in GB, then it looks within %s for the national digits %j', (term, callingCode, nationalDigits) => {
    expect(searchedNumber(term, { phone_country_iso: 'GB', phone_country_code: '+44' })).toEqual({ callingCode, nationalDigits })
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
