import type { Application } from '../declarations.js'
import { accounts } from './accounts/index.js'
import { crm } from './crm/index.js'
import { reservations } from './reservations/index.js'
import { inbox } from './inbox/index.js'
import { integrations } from './integrations/index.js'

/**
 * Every service, by domain: each domain's index.ts registers its resources, and a resource's
 * registration, hooks and docs live in its own folder (CONTRIBUTING.md).
 */
export const services = (app: Application) => {
  app.configure(accounts)
  app.configure(crm)
  app.configure(reservations)
  app.configure(inbox)
  app.configure(integrations)
}
