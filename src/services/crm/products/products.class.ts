import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import { containsPattern } from '../../../engine/search.js'
import type { SearchRule } from '../../../engine/search.js'
import type { Product, ProductData, ProductPatch, ProductQuery, ProductSearch } from './products.schema.js'

export type { Product, ProductData, ProductPatch, ProductQuery, ProductSearch }
export type ProductParams = KnexAdapterParams<ProductQuery>

/** Name (any case or accent) or SKU (any case); names that start with the term first (src/engine/search.ts). */
const SEARCH_RULE: SearchRule = {
  term: 'search_fold(btrim(:term))',
  texts: ['search_fold(t.name)', 'lower(t.sku)'],
  prefixes: [{ key: 'search_fold(t.name)' }]
}

export class ProductService extends RecordService<Product, ProductData, ProductParams, ProductPatch> {
  /** A plain name filter is a partial, case-insensitive match; operators pass through. */
  async _find(params: ProductParams = {}): Promise<any> {
    const { name, ...query } = (params.query ?? {}) as Record<string, any>
    if (typeof name === 'string') query.name = { $ilike: containsPattern(name) }
    else if (name !== undefined) query.name = name
    return super._find({ ...params, query })
  }

  async search(data: ProductSearch) {
    return this.searchRecords(SEARCH_RULE, data)
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'products',
  // Media of a deleted product go too; the media purge removes their files after the grace period.
  softDeleteCascade: [{ table: 'product_media', column: 'product_id', path: 'product-media' }]
})
