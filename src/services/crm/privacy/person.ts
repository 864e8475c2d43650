import { NotFound } from '@feathersjs/errors'
import type { Knex } from 'knex'

/**
 * A person as the organization holds them: the contact asked for and every contact a merge
 * folded into it (their duplicates, deleted since), the conversations of those contacts, and the
 * words that name them (for the texts of records they share with others).
 */
export interface Person {
  organizationId: number
  contactId: number
  /** The contact and the contacts merged into it, deleted ones included (ordered by id). */
  contactIds: number[]
  conversationIds: number[]
  /** Stored rows of those contacts (every column). */
  contacts: Record<string, any>[]
}

/**
 * The person of a contact of one organization, deleted or not: the contact's rows locked when
 * `lock` (an erasure), so that no merge or second erasure changes them meanwhile. 404 for an id
 * that is not a contact of the organization.
 */
export async function findPerson(db: Knex, organizationId: number, contactId: number, { lock = false } = {}): Promise<Person | undefined> {
  const ids: { id: number }[] = (await db.raw(
    `WITH RECURSIVE person(id) AS (
       SELECT id FROM contacts WHERE organization_id = ? AND id = ?
       UNION
       SELECT c.id FROM contacts c JOIN person ON c.organization_id = ? AND c.merged_into_id = person.id
     ) SELECT id FROM person ORDER BY id`,
    [organizationId, contactId, organizationId]
  )).rows
  if (ids.length === 0) return undefined
  const contactIds = ids.map((row) => row.id)
  const contacts = db('contacts').where('organization_id', organizationId).whereIn('id', contactIds).orderBy('id')
  const rows: Record<string, any>[] = await (lock ? contacts.forUpdate() : contacts)
  const conversationIds: number[] = await db('conversations')
    .where('organization_id', organizationId).whereIn('contact_id', contactIds).orderBy('id').pluck('id')
  return { organizationId, contactId, contactIds: rows.map((row) => row.id), conversationIds, contacts: rows }
}

export const contactNotFound = (id: number) => new NotFound(`No record found for id '${id}'`)

/**
 * A condition on a JSON column: the document holds a record of the person's organization that
 * is one of their contacts, names one of them (contact_id, or a joined contact) or belongs to one
 * of their conversations (a message, a file). Records carry their organization_id, so a copy of
 * another organization's record never matches. Served as a jsonpath test, at any depth: webhook
 * payloads ({data: {object, previous_attributes}}), stored answers (a record, a page, a batch).
 */
export function carriesPerson(column: string, person: Person): { sql: string; bindings: Knex.RawBinding[] } {
  const path = `lax $.** ? (@.organization_id == $o && (@.contact_id == $p || @.contact.id == $p || (@.system_type == "contact" && @.id == $p) || @.conversation_id == $c))`
  const variables = { o: person.organizationId, p: person.contactIds, c: person.conversationIds }
  return { sql: `jsonb_path_exists(${column}, ?::jsonpath, ?::jsonb)`, bindings: [path, JSON.stringify(variables)] }
}

const REGEX_SPECIALS = /[.*+?^${}()|[\]\\]/g

/**
 * The words that name the person in a text: their names (whole words, two letters at least),
 * e-mail addresses and phones as written, as one case-insensitive regular expression; null
 * when they have none.
 */
export function namingPattern(person: Person): string | null {
  const names = new Set<string>()
  const literals = new Set<string>()
  for (const contact of person.contacts) {
    for (const name of [contact.first_name, contact.last_name]) {
      for (const word of String(name ?? '').split(/\s+/)) if (word.length >= 2) names.add(word.toLowerCase())
    }
    for (const value of [contact.email, contact.phone]) if (typeof value === 'string' && value.trim().length >= 3) literals.add(value.trim().toLowerCase())
  }
  const escape = (text: string) => text.replace(REGEX_SPECIALS, '\\$&')
  const parts = [...[...literals].map(escape), ...[...names].map((name) => `\\m${escape(name)}\\M`)]
  return parts.length ? `(${parts.join('|')})` : null
}

export const ERASED_TEXT = '[erased]'
