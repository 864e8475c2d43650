import type { ClientApplication } from '../../client.js'
import { userClient } from './users/users.shared.js'
import { organizationClient } from './organizations/organizations.shared.js'
import { membershipClient } from './organizations-users/organizations-users.shared.js'
import { invitationClient } from './organizations-users-invites/organizations-users-invites.shared.js'
import { apiKeyClient } from './api-keys/api-keys.shared.js'

/** Typed client registrations of the accounts domain, used by src/client.ts. */
export const accountsClients = (client: ClientApplication) => {
  client.configure(userClient)
  client.configure(organizationClient)
  client.configure(membershipClient)
  client.configure(invitationClient)
  client.configure(apiKeyClient)
}
