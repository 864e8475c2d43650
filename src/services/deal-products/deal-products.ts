import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { checkAmounts } from '../deals/money.js'
import { DealProductService, getOptions } from './deal-products.class.js'
import {
  dealProductAmountRules, dealProductDataSchema, dealProductDataValidator, dealProductPatchSchema,
  dealProductPatchValidator, dealProductQuerySchema, dealProductQueryValidator, dealProductResolver, dealProductSchema
} from './deal-products.schema.js'
import { dealProductMethods, dealProductPath } from './deal-products.shared.js'

export * from './deal-products.class.js'
export * from './deal-products.schema.js'

export const dealProduct = (app: Application) => {
  app.use(dealProductPath, new DealProductService(getOptions(app)), {
    methods: dealProductMethods,
    events: [],
    docs: {
      description: 'Products on a deal, with discount and tax totals computed by the service in exact decimals (half-up to cents).',
      schemas: { result: dealProductSchema, data: dealProductDataSchema, patch: dealProductPatchSchema, query: dealProductQuerySchema }
    }
  } as any)
  app.service(dealProductPath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(dealProductResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(dealProductQueryValidator), scopeToTenant()],
      create: [
        schemaHooks.validateData(dealProductDataValidator),
        checkAmounts(dealProductAmountRules),
        verifyReferences({ deal_id: { table: 'deals' }, product_id: { table: 'products' } })
      ],
      patch: [schemaHooks.validateData(dealProductPatchValidator), checkAmounts(dealProductAmountRules)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [dealProductPath]: DealProductService
  }
}
