import { feathers } from '@feathersjs/feathers'
import type { Application, TransportConnection } from '@feathersjs/feathers'
import { accountsClients } from './services/accounts/clients.js'
import { crmClients } from './services/crm/clients.js'
import { reservationsClients } from './services/reservations/clients.js'
import { inboxClients } from './services/inbox/clients.js'
import { integrationsClients } from './services/integrations/clients.js'

export interface Configuration {
  connection: TransportConnection<ServiceTypes>
}

// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ServiceTypes {}

export type ClientApplication = Application<ServiceTypes, Configuration>

/**
 * A typed client for every service, e.g.
 *   const client = createClient(rest('http://localhost:3030').fetch(fetch, { headers: { 'x-api-key': key } }))
 */
export const createClient = <Configuration = any>(connection: TransportConnection<ServiceTypes>) => {
  const client: ClientApplication = feathers()
  client.configure(connection)
  client.set('connection', connection)
  client.configure(accountsClients)
  client.configure(crmClients)
  client.configure(reservationsClients)
  client.configure(inboxClients)
  client.configure(integrationsClients)
  return client
}
