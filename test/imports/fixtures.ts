import { stringify } from 'csv-stringify/sync'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'

/**
 * CSV files as other CRMs and address books export contacts, written from their documented
 * column sets (no file downloaded): HubSpot's contacts export, Pipedrive's people export,
 * Google Contacts' CSV and Outlook's.
 */

export interface Person {
  first: string
  last: string
  email: string
  phone?: string
  company?: string
  notes?: string
}

/** HubSpot "Export contacts": comma-separated, UTF-8 with a byte-order mark. */
export function hubspotCsv(people: Person[]): Buffer {
  const header = ['Record ID', 'First Name', 'Last Name', 'Email', 'Phone Number', 'Company Name', 'Job Title', 'Contact owner', 'Lifecycle Stage', 'Create Date']
  const rows = people.map((p, i) => [String(9000 + i), p.first, p.last, p.email, p.phone ?? '', p.company ?? '', 'Engineer', 'Owner Name', 'lead', '2024-05-01 10:00'])
  return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(stringify([header, ...rows]))])
}

/** Pipedrive "Export people": `;`-separated, in Latin-1 (ISO-8859-1) as spreadsheet tools in much of Europe write it. */
export function pipedriveCsv(people: Person[]): Buffer {
  const header = ['Person - Name', 'Person - Label', 'Person - Organization', 'Person - Email - Work', 'Person - Phone - Work', 'Person - Owner', 'Person - First name', 'Person - Last name']
  const rows = people.map((p) => [`${p.first} ${p.last}`, 'Customer', p.company ?? '', p.email, p.phone ?? '', 'Owner Name', p.first, p.last])
  return Buffer.from(stringify([header, ...rows], { delimiter: ';' }), 'latin1')
}

/** Google Contacts "Export → Google CSV": comma-separated, notes may span lines. */
export function googleCsv(people: Person[]): Buffer {
  const header = ['First Name', 'Middle Name', 'Last Name', 'Phonetic First Name', 'Nickname', 'Birthday', 'Notes', 'Labels',
    'E-mail 1 - Label', 'E-mail 1 - Value', 'Phone 1 - Label', 'Phone 1 - Value', 'Organization Name', 'Organization Title']
  const rows = people.map((p) => [p.first, '', p.last, '', '', '', p.notes ?? '', '* myContacts', '* Work', p.email, 'Mobile', p.phone ?? '', p.company ?? '', 'CTO'])
  return Buffer.from(stringify([header, ...rows]))
}

/** Outlook "Export to a file → Comma Separated Values" (here with tabs, as Outlook's tab-separated export). */
export function outlookCsv(people: Person[]): Buffer {
  const header = ['First Name', 'Middle Name', 'Last Name', 'Title', 'Suffix', 'E-mail Address', 'E-mail 2 Address', 'Home Phone', 'Business Phone',
    'Mobile Phone', 'Job Title', 'Department', 'Company', 'Business City', 'Notes']
  const rows = people.map((p) => [p.first, '', p.last, '', '', p.email, '', '', '', p.phone ?? '', 'Manager', 'Sales', p.company ?? '', 'London', p.notes ?? ''])
  return Buffer.from(stringify([header, ...rows], { delimiter: '\t' }))
}

/** POST /imports with a file (multipart) and text fields. */
export function upload(t: TestApp, tenant: Tenant, file: Buffer, fields: Record<string, string>, name = 'contacts.csv') {
  const request = t.http().post('/imports').set(tenant.key)
  for (const [field, value] of Object.entries(fields)) request.field(field, value)
  return request.attach('file', file, { filename: name, contentType: 'text/csv' })
}

/** Starts an import and runs the outbox until it has ended; answers the import as GET sends it. */
export async function runToEnd(t: TestApp, tenant: Tenant, id: number) {
  const started = await t.http().post(`/imports/${id}`).set(tenant.key).set('X-Service-Method', 'start').send({})
  if (started.status !== 201 && started.status !== 200) throw new Error(`start failed: ${started.status} ${JSON.stringify(started.body)}`)
  for (let attempt = 0; attempt < 100; attempt++) {
    await t.app.get('outbox').deliverDue()
    const record = (await t.http().get(`/imports/${id}`).set(tenant.key)).body
    if (!['queued', 'running'].includes(record.status)) return record
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the import did not end')
}
