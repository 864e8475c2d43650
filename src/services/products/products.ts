import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { resolveRecords } from '../../hooks/resolve-records.js'
import { checkAmounts } from '../deals/money.js'
import { ProductService, getOptions } from './products.class.js'
import {
  productAmountRules, productDataSchema, productDataValidator, productPatchSchema, productPatchValidator,
  productQuerySchema, productQueryValidator, productResolver, productSchema, productSearchResultSchema,
  productSearchSchema, productSearchValidator
} from './products.schema.js'
import { productMethods, productPath } from './products.shared.js'

export * from './products.class.js'
export * from './products.schema.js'

export const product = (app: Application) => {
  app.use(productPath, new ProductService(getOptions(app)), {
    methods: productMethods,
    events: [],
    docs: {
      description: 'The product catalogue of an organization, which deal products and product media point to.',
      schemas: {
        result: productSchema, data: productDataSchema, patch: productPatchSchema, query: productQuerySchema,
        search: { data: productSearchSchema, result: productSearchResultSchema }
      }
    }
  } as any)
  app.service(productPath).hooks({
    around: {
      all: [authenticated, resolveRecords(productResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(productQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(productDataValidator), checkAmounts(productAmountRules)],
      patch: [schemaHooks.validateData(productPatchValidator), checkAmounts(productAmountRules)],
      search: [schemaHooks.validateData(productSearchValidator)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [productPath]: ProductService
  }
}
