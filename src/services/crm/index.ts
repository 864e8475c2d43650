import type { Application } from '../../declarations.js'
import { company } from './companies/companies.js'
import { customField } from './custom-fields/custom-fields.js'
import { contact } from './contacts/contacts.js'
import { pipeline } from './pipelines/pipelines.js'
import { pipelineStage } from './pipeline-stages/pipeline-stages.js'
import { product } from './products/products.js'
import { deal } from './deals/deals.js'
import { dealProduct } from './deal-products/deal-products.js'
import { activityType } from './activity-types/activity-types.js'
import { activity } from './activities/activities.js'
import { productMedia } from './product-media/product-media.js'
import { personalDataErasure } from './personal-data-erasures/personal-data-erasures.js'
import { importService } from './imports/imports.js'

/** The crm domain, the customer records: companies, contacts, deals with pipelines and products, activities, custom fields, product media, CSV imports and personal-data erasures. */
export const crm = (app: Application) => {
  app.configure(company)
  app.configure(customField)
  app.configure(contact)
  app.configure(pipeline)
  app.configure(pipelineStage)
  app.configure(product)
  app.configure(deal)
  app.configure(dealProduct)
  app.configure(activityType)
  app.configure(activity)
  app.configure(productMedia)
  app.configure(personalDataErasure)
  app.configure(importService)
}
