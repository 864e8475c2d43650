import { feathers } from '@feathersjs/feathers'
import type { Application, TransportConnection } from '@feathersjs/feathers'
import { userClient } from './services/users/users.shared.js'
import { organizationClient } from './services/organizations/organizations.shared.js'
import { membershipClient } from './services/organizations-users/organizations-users.shared.js'
import { apiKeyClient } from './services/api-keys/api-keys.shared.js'
import { companyClient } from './services/companies/companies.shared.js'

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
  client.configure(userClient)
  client.configure(organizationClient)
  client.configure(membershipClient)
  client.configure(apiKeyClient)
  client.configure(companyClient)
  return client
}
