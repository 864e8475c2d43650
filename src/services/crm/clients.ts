import type { ClientApplication } from '../../client.js'
import { companyClient } from './companies/companies.shared.js'
import { customFieldClient } from './custom-fields/custom-fields.shared.js'
import { contactClient } from './contacts/contacts.shared.js'
import { pipelineClient } from './pipelines/pipelines.shared.js'
import { pipelineStageClient } from './pipeline-stages/pipeline-stages.shared.js'
import { productClient } from './products/products.shared.js'
import { dealClient } from './deals/deals.shared.js'
import { dealProductClient } from './deal-products/deal-products.shared.js'
import { activityTypeClient } from './activity-types/activity-types.shared.js'
import { activityClient } from './activities/activities.shared.js'
import { productMediaClient } from './product-media/product-media.shared.js'
import { importClient } from './imports/imports.shared.js'
import { personalDataErasureClient } from './personal-data-erasures/personal-data-erasures.shared.js'

/** Typed client registrations of the crm domain, used by src/client.ts. */
export const crmClients = (client: ClientApplication) => {
  client.configure(companyClient)
  client.configure(customFieldClient)
  client.configure(contactClient)
  client.configure(pipelineClient)
  client.configure(pipelineStageClient)
  client.configure(productClient)
  client.configure(dealClient)
  client.configure(dealProductClient)
  client.configure(activityTypeClient)
  client.configure(activityClient)
  client.configure(productMediaClient)
  client.configure(importClient)
  client.configure(personalDataErasureClient)
}
