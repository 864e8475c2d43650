import type { Application } from '../../../declarations.js'
import { byExternalId } from '../../../engine/batch-writes.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { checkAmounts } from '../../../lib/money.js'
import { DealProductService, getOptions } from './deal-products.class.js'
import {
  dealProductAmountRules, dealProductDataSchema, dealProductDataValidator, dealProductPatchSchema,
  dealProductPatchValidator, dealProductQuerySchema, dealProductQueryValidator, dealProductSchema
} from './deal-products.schema.js'
import { dealProductMethods, dealProductPath } from './deal-products.shared.js'

export * from './deal-products.class.js'
export * from './deal-products.schema.js'

export const dealProduct = (app: Application) =>
  tenantResource(app, {
    path: dealProductPath,
    service: new DealProductService(getOptions(app)),
    methods: dealProductMethods,
    description: 'Products on a deal, with discount and tax totals computed by the service in exact decimals (half-up to cents).',
    schemas: { result: dealProductSchema, data: dealProductDataSchema, patch: dealProductPatchSchema, query: dealProductQuerySchema },
    validators: { query: dealProductQueryValidator, data: dealProductDataValidator, patch: dealProductPatchValidator },
    references: { deal_id: { table: 'deals' }, product_id: { table: 'products' } },
    batch: { upsertKeys: { external_id: byExternalId } },
    rules: { create: [checkAmounts(dealProductAmountRules)], patch: [checkAmounts(dealProductAmountRules)] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [dealProductPath]: DealProductService
  }
}
