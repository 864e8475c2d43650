import type { Application } from '../declarations.js'
import { user } from './users/users.js'
import { organization } from './organizations/organizations.js'
import { organizationUser } from './organizations-users/organizations-users.js'
import { apiKey } from './api-keys/api-keys.js'
import { company } from './companies/companies.js'

// One line per service; each resource's registration, hooks and docs live in its own folder.
export const services = (app: Application) => {
  app.configure(user)
  app.configure(organization)
  app.configure(organizationUser)
  app.configure(apiKey)
  app.configure(company)
}
