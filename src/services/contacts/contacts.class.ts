import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../declarations.js'
import { RecordService } from '../record-service.js'
import { USER_SUMMARY } from '../joins.js'
import type { JoinSpec } from '../joins.js'
import { containsPattern } from '../like.js'
import type { Contact, ContactData, ContactPatch, ContactQuery, ContactSearch } from './contacts.schema.js'

export type { Contact, ContactData, ContactPatch, ContactQuery, ContactSearch }
export type ContactParams = KnexAdapterParams<ContactQuery>

// A deleted company joins as null: its contacts stay, pointing at a company no longer shown.
export const COMPANY_AND_OWNER: JoinSpec[] = [
  { from: 'company_id', as: 'company', table: 'companies', columns: ['id', 'name'] },
  { from: 'owned_by_user_id', as: 'owner', table: 'users', columns: USER_SUMMARY, tenant: false }
]

/**
 * The digits a phone search compares: every digit of the number, without the international
 * prefix ('+' or '00') and the contact's own country code when the number is written with them,
 * so '+44 20 7946 0958' and '20 7946 0958' (country code +44) both become '2079460958'.
 */
export function normalizePhone(phone: string | null | undefined, countryCode: string | null | undefined): string | null {
  if (phone === null || phone === undefined) return null
  const trimmed = phone.trim()
  let digits = trimmed.replace(/\D/g, '')
  const international = trimmed.startsWith('+') || trimmed.startsWith('00')
  if (international) {
    if (trimmed.startsWith('00')) digits = digits.slice(2)
    const code = (countryCode ?? '').replace(/\D/g, '')
    if (code && digits.startsWith(code)) digits = digits.slice(code.length)
  }
  return digits || null
}


export class ContactService extends RecordService<Contact, ContactData, ContactParams, ContactPatch> {
  /**
   * name: case- and accent-insensitive partial match on "first last" (so on either name too);
   * email: case-insensitive partial match; phone: digits partial match within a country code.
   * Each mode's condition is the expression of a trigram GIN index led by organization_id.
   */
  async search(data: ContactSearch, params: ContactParams = {}) {
    const query = this.knex('contacts').where('organization_id', data.organization_id!).whereNull('deleted_at')
    const term = data.searchTerm.trim().replace(/\s+/g, ' ')
    let order: string[]
    if (data.searchIn === 'name') {
      // search_name is the stored, folded "first last" (migration 20261121000310), indexed by trigram.
      query.whereRaw('search_name LIKE search_fold(?)', [containsPattern(term)])
      order = ['first_name', 'last_name']
    } else if (data.searchIn === 'email') {
      query.whereRaw('lower(email) LIKE ?', [containsPattern(term)])
      order = ['email']
    } else {
      const digits = normalizePhone(term, data.phone_country_code) ?? ''
      query.where('phone_country_code', data.phone_country_code!).where('phone_normalized', 'like', containsPattern(digits))
      order = ['phone_normalized']
    }
    return this.searchPage(query, order, data)
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'contacts'
})
