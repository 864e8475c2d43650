import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../declarations.js'
import { RecordService } from '../record-service.js'
import { containsPattern } from '../like.js'
import type { Product, ProductData, ProductPatch, ProductQuery, ProductSearch } from './products.schema.js'

export type { Product, ProductData, ProductPatch, ProductQuery, ProductSearch }
export type ProductParams = KnexAdapterParams<ProductQuery>

export class ProductService extends RecordService<Product, ProductData, ProductParams, ProductPatch> {
  /** A plain name filter is a partial, case-insensitive match; operators pass through. */
  async _find(params: ProductParams = {}): Promise<any> {
    const { name, ...query } = (params.query ?? {}) as Record<string, any>
    if (typeof name === 'string') query.name = { $ilike: containsPattern(name) }
    else if (name !== undefined) query.name = name
    return super._find({ ...params, query })
  }

  /** Partial, case-insensitive match on name or SKU, served by the trigram index. */
  async search(data: ProductSearch, _params: ProductParams = {}) {
    const pattern = containsPattern(data.searchTerm)
    const rows = await this.knex('products')
      .where('organization_id', data.organization_id!)
      .whereNull('deleted_at')
      .where((q) => q.whereRaw('lower(name) LIKE ?', [pattern]).orWhereRaw('lower(sku) LIKE ?', [pattern]))
      .orderBy([{ column: 'name' }, { column: 'id' }])
      .limit(data.$limit ?? 10)
    return { data: rows as Product[] }
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'products'
})
