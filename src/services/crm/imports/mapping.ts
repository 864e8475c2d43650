import type { TObject, TSchema } from '@feathersjs/typebox'
import { fieldError } from '../../../hooks/errors.js'
import type { CustomFieldDefinition, CustomFieldEntity } from '../../../hooks/custom-field-values.js'
import { contactDataSchema } from '../contacts/contacts.schema.js'
import { companyDataSchema } from '../companies/companies.schema.js'
import { dealDataSchema } from '../deals/deals.schema.js'

/**
 * What a column of an import's file becomes: a field of the resource, a custom field by name
 * (`custom_fields_by_name.<name>`), or, for contacts and deals, `company_name`: the company of
 * that name, found or created. The service proposes a mapping from the header (field names, the
 * usual spellings, and the column names of HubSpot, Pipedrive, Google Contacts and Outlook
 * exports); the client may send its own.
 */

export const IMPORTED_RESOURCES = ['contacts', 'companies', 'deals'] as const
export type ImportedResource = (typeof IMPORTED_RESOURCES)[number]

export const COMPANY_NAME = 'company_name'
export const CUSTOM_FIELD_TARGET = 'custom_fields_by_name.'

/** A column → its target (null: not imported). */
export type Mapping = Record<string, string | null>

interface ResourceDeclaration {
  data: TObject
  entity: CustomFieldEntity
  /** A company named in a row is found or created. */
  companyName: boolean
  /** Per target, the header spellings (lower-case letters and digits only) that mean it, best first. */
  synonyms: Record<string, string[]>
  /** Spellings that mean a target only when no column names it better (a full name as the first name). */
  fallbacks?: Record<string, string[]>
}

const EMAIL = ['email', 'emailaddress', 'email1value', 'primaryemail', 'workemail', 'businessemail', 'personemail', 'personemailwork', 'emailwork', 'emailhome', 'homeemail', 'emailaddress1']
const PHONE = ['phone', 'phonenumber', 'phone1value', 'mobile', 'mobilephone', 'mobilephonenumber', 'mobilenumber', 'cell', 'cellphone', 'personphone', 'personphonemobile',
  'personphonework', 'phonemobile', 'phonework', 'primaryphone', 'businessphone', 'workphone', 'telephone', 'tel', 'homephone']
const COMPANY = ['company', 'companyname', 'organization', 'organisation', 'organizationname', 'organization1name', 'account', 'accountname',
  'associatedcompany', 'personorganization', 'employer', 'dealorganization']
const EXTERNAL_ID = ['externalid', 'recordid', 'importid', 'sourceid']

const RESOURCES: Record<ImportedResource, ResourceDeclaration> = {
  contacts: {
    data: contactDataSchema,
    entity: 'contact',
    companyName: true,
    synonyms: {
      first_name: ['firstname', 'first', 'givenname', 'forename', 'personfirstname'],
      last_name: ['lastname', 'last', 'surname', 'familyname', 'personlastname'],
      email: EMAIL,
      phone: PHONE,
      phone_country_code: ['phonecountrycode', 'countrycode', 'dialcode'],
      phone_country_iso: ['phonecountryiso', 'countryiso'],
      avatar_url: ['avatar', 'avatarurl', 'photo', 'photourl', 'picture'],
      external_id: [...EXTERNAL_ID, 'contactid', 'personid'],
      [COMPANY_NAME]: COMPANY
    },
    fallbacks: { first_name: ['name', 'fullname', 'personname', 'displayname', 'contactname'] }
  },
  companies: {
    data: companyDataSchema,
    entity: 'company',
    companyName: false,
    synonyms: {
      name: ['name', 'companyname', 'company', 'organization', 'organisation', 'organizationname', 'accountname', 'account'],
      website: ['website', 'websiteurl', 'domain', 'companydomainname', 'url', 'web', 'homepage'],
      industry: ['industry', 'sector'],
      size: ['size', 'companysize', 'employees', 'numberofemployees'],
      description: ['description', 'about', 'notes'],
      external_id: [...EXTERNAL_ID, 'companyid', 'organizationid']
    }
  },
  deals: {
    data: dealDataSchema,
    entity: 'deal',
    companyName: true,
    synonyms: {
      name: ['name', 'dealname', 'title', 'dealtitle'],
      amount: ['amount', 'value', 'dealvalue', 'dealamount'],
      currency: ['currency', 'dealcurrency', 'currencycode'],
      status: ['status', 'dealstatus'],
      expected_close_date: ['expectedclosedate', 'closedate', 'dealexpectedclosedate'],
      external_id: [...EXTERNAL_ID, 'dealid'],
      [COMPANY_NAME]: COMPANY
    }
  }
}

/** A header as compared: lower case, letters and digits only ("E-mail Address" → emailaddress). */
const spelling = (header: string) => header.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]/g, '')

/** The fields a client may set on the resource (its data schema), besides the organization and custom fields. */
export function writableFields(resource: ImportedResource): string[] {
  return Object.keys(RESOURCES[resource].data.properties).filter((name) => name !== 'organization_id' && name !== 'custom_fields_by_name')
}

export const entityOf = (resource: ImportedResource) => RESOURCES[resource].entity

/** Every target a column of this resource may have. */
export function targetsOf(resource: ImportedResource, definitions: CustomFieldDefinition[]): Set<string> {
  return new Set([
    ...writableFields(resource),
    ...(RESOURCES[resource].companyName ? [COMPANY_NAME] : []),
    ...definitions.map((definition) => `${CUSTOM_FIELD_TARGET}${definition.name}`)
  ])
}

/**
 * The mapping the service proposes: each column by its field's name, its custom field's name or
 * key, or a known spelling; one column per target (the first), every other column left out.
 */
export function proposeMapping(resource: ImportedResource, columns: string[], definitions: CustomFieldDefinition[]): Mapping {
  const declaration = RESOURCES[resource]
  // Each spelling's target and rank: a field's own name first, then its synonyms best first.
  const bySpelling = new Map<string, { target: string; rank: number }>()
  const add = (target: string, spellings: string[], rank = 0) => {
    spellings.forEach((word, index) => {
      if (!bySpelling.has(word)) bySpelling.set(word, { target, rank: rank + index })
    })
  }
  for (const field of writableFields(resource)) add(field, [spelling(field)])
  for (const definition of definitions) add(`${CUSTOM_FIELD_TARGET}${definition.name}`, [spelling(definition.name), spelling(definition.key)])
  for (const [target, spellings] of Object.entries(declaration.synonyms)) add(target, spellings, 1)
  // "Person - Email" (Pipedrive): the words after a "Person -" prefix count too.
  const matchOf = (column: string) => bySpelling.get(spelling(column)) ?? bySpelling.get(spelling(column).replace(/^(person|contact|organization|deal)/, ''))
  const best = new Map<string, { column: string; rank: number }>()
  for (const column of columns) {
    const match = matchOf(column)
    if (match && (!best.has(match.target) || best.get(match.target)!.rank > match.rank)) best.set(match.target, { column, rank: match.rank })
  }
  const mapping: Mapping = Object.fromEntries(columns.map((column) => [column, null]))
  for (const [target, { column }] of best) mapping[column] = target
  for (const [target, spellings] of Object.entries(declaration.fallbacks ?? {})) {
    if (best.has(target)) continue
    const column = columns.find((candidate) => mapping[candidate] === null && spellings.includes(spelling(candidate)))
    if (column) mapping[column] = target
  }
  return mapping
}

/**
 * A client's mapping checked against the file's columns and the resource's targets (a 400 naming
 * the column otherwise), over `base` (the proposed or stored mapping): the columns it names take
 * its targets, the others keep theirs unless the client gave their target to another column.
 */
export function checkMapping(mapping: unknown, columns: string[], targets: Set<string>, base: Mapping = {}): Mapping {
  if (!mapping || typeof mapping !== 'object' || Array.isArray(mapping)) throw fieldError('mapping', 'must be an object: column name → field name (or null)')
  const sent = mapping as Record<string, unknown>
  const claimed = new Map<string, string>()
  for (const [column, target] of Object.entries(sent)) {
    if (!columns.includes(column)) throw fieldError(`mapping.${column}`, 'is not a column of the file')
    if (target === null || target === '') continue
    if (typeof target !== 'string' || !targets.has(target)) throw fieldError(`mapping.${column}`, `must be a field of this resource, ${COMPANY_NAME}, ${CUSTOM_FIELD_TARGET}<name> or null`)
    if (claimed.has(target)) throw fieldError(`mapping.${column}`, `maps to ${target}, as column "${claimed.get(target)}" does`)
    claimed.set(target, column)
  }
  return Object.fromEntries(columns.map((column) => {
    if (Object.hasOwn(sent, column)) return [column, (sent[column] || null) as string | null]
    const kept = base[column] ?? null
    return [column, kept !== null && claimed.has(kept) ? null : kept]
  }))
}

/** A cell our export escaped against formulas ('=…), as it was. */
const unescaped = (cell: string) => (/^'[=+\-@\t\r]/.test(cell) ? cell.slice(1) : cell)

const TRUE = new Set(['true', 'yes', 'y', '1', 'x'])
const FALSE = new Set(['false', 'no', 'n', '0'])
const NUMBER = /^-?\d+(\.\d+)?$/

/** The JSON types a schema accepts (a Nullable union's members included). */
function typesOf(schema: TSchema | undefined): Set<string> {
  if (!schema) return new Set(['string'])
  const members = (schema.anyOf ?? schema.oneOf ?? [schema]) as TSchema[]
  return new Set(members.flatMap((member) => (Array.isArray(member.type) ? member.type : [member.type])).filter(Boolean))
}

/** A cell as the value its field takes: text as it is; a number, a boolean where the field takes only those (else the text, which validation refuses). */
function valueOf(cell: string, types: Set<string>): unknown {
  if (types.has('string')) return cell
  if ((types.has('integer') || types.has('number')) && NUMBER.test(cell)) return Number(cell)
  if (types.has('boolean') && TRUE.has(cell.toLowerCase())) return true
  if (types.has('boolean') && FALSE.has(cell.toLowerCase())) return false
  return cell
}

/** A cell as its custom field's value: a number, a boolean, a list (";" or "," between values), else the text. */
function customValueOf(cell: string, definition: CustomFieldDefinition): unknown {
  switch (definition.field_type) {
    case 'number':
      return NUMBER.test(cell) ? Number(cell) : cell
    case 'boolean':
      return TRUE.has(cell.toLowerCase()) ? true : FALSE.has(cell.toLowerCase()) ? false : cell
    case 'multiselect':
      return cell.split(/[;,]/).map((value) => value.trim()).filter(Boolean)
    default:
      return cell
  }
}

/** A record built from one row, and the name of its company (found or created), if any. */
export interface RowRecord {
  body: Record<string, unknown>
  companyName?: string
}

/**
 * Turns rows into create bodies by a mapping: empty cells are left out (a matched record keeps
 * its value), custom fields go under custom_fields_by_name, and a website without a scheme gets https://.
 */
export function rowReader(resource: ImportedResource, columns: string[], mapping: Mapping, definitions: CustomFieldDefinition[]) {
  const properties = RESOURCES[resource].data.properties as Record<string, TSchema>
  const byName = new Map(definitions.map((definition) => [definition.name, definition]))
  const targets = columns.map((column) => mapping[column] ?? null)
  const types = targets.map((target) => (target && target in properties ? typesOf(properties[target]) : undefined))
  return (cells: string[]): RowRecord => {
    const body: Record<string, unknown> = {}
    const custom: Record<string, unknown> = {}
    let companyName: string | undefined
    targets.forEach((target, index) => {
      const cell = unescaped((cells[index] ?? '').trim())
      if (!target || cell === '') return
      if (target === COMPANY_NAME) companyName = cell
      else if (target.startsWith(CUSTOM_FIELD_TARGET)) {
        const name = target.slice(CUSTOM_FIELD_TARGET.length)
        custom[name] = customValueOf(cell, byName.get(name)!)
      } else if (target === 'website' && !/^[a-z][a-z0-9+.-]*:/i.test(cell)) body.website = `https://${cell}`
      else body[target] = valueOf(cell, types[index]!)
    })
    if (Object.keys(custom).length) body.custom_fields_by_name = custom
    return { body, companyName }
  }
}
