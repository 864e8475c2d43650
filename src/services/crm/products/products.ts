import type { Application } from '../../../declarations.js'
import { byExternalId } from '../../../engine/batch-writes.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { checkAmounts } from '../../../lib/money.js'
import { ProductService, getOptions } from './products.class.js'
import {
  productAmountRules, productDataSchema, productDataValidator, productPatchSchema, productPatchValidator,
  productQuerySchema, productQueryValidator, productSchema, productSearchResultSchema, productSearchSchema, productSearchValidator
} from './products.schema.js'
import { productMethods, productPath } from './products.shared.js'

export * from './products.class.js'
export * from './products.schema.js'

export const product = (app: Application) =>
  tenantResource(app, {
    path: productPath,
    service: new ProductService(getOptions(app)),
    methods: productMethods,
    description: 'The product catalogue of an organization, which deal products and product media point to. Deleting a product deletes its media.',
    schemas: { result: productSchema, data: productDataSchema, patch: productPatchSchema, query: productQuerySchema },
    validators: { query: productQueryValidator, data: productDataValidator, patch: productPatchValidator },
    rules: { create: [checkAmounts(productAmountRules)], patch: [checkAmounts(productAmountRules)] },
    batch: {
      upsertKeys: {
        sku: { matches: (k) => `t.sku = ${k}`, sent: (k) => k, value: (row) => row.sku, field: 'sku' },
        external_id: byExternalId
      }
    },
    custom: {
      search: {
        data: productSearchValidator,
        docs: { data: productSearchSchema, result: productSearchResultSchema, description: 'Partial, case-insensitive match on name or SKU.' },
        reads: true
      }
    }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [productPath]: ProductService
  }
}
