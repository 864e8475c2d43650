import type { Application } from '../../declarations.js'
import { user } from './users/users.js'
import { organization } from './organizations/organizations.js'
import { organizationUser } from './organizations-users/organizations-users.js'
import { invitation } from './organizations-users-invites/organizations-users-invites.js'
import { apiKey } from './api-keys/api-keys.js'

/** The accounts domain, people and access: users, organizations, their members, invitations and API keys. */
export const accounts = (app: Application) => {
  app.configure(user)
  app.configure(organization)
  app.configure(organizationUser)
  app.configure(invitation)
  app.configure(apiKey)
}
