import type { ClientApplication } from '../../../client.js'
import type { Contact, ContactData, ContactPatch, ContactQuery, ContactSearch, ContactService } from './contacts.class.js'

export type { Contact, ContactData, ContactPatch, ContactQuery, ContactSearch }
export type ContactClientService = Pick<ContactService, (typeof contactMethods)[number]>

export const contactPath = 'contacts'
export const contactMethods: Array<keyof ContactService> = ['find', 'get', 'create', 'patch', 'remove', 'upsert', 'batch-update', 'batch-delete', 'search', 'find-duplicates', 'merge', 'export-personal-data', 'erase-personal-data']

export const contactClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(contactPath, connection.service(contactPath), { methods: contactMethods, events: ['erased'] })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [contactPath]: ContactClientService
  }
}
