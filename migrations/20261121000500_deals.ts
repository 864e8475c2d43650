import type { Knex } from 'knex'

// Pipelines, stages, products, deals and deal products: the indexes behind their filters and
// the rules the database itself keeps (unique live SKUs, status dates, discount columns).
// PGlite accepts one statement per query, so every raw statement stands alone.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX pipelines_position ON pipelines (organization_id, type, position) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX pipeline_stages_position ON pipeline_stages (organization_id, pipeline_id, position) WHERE deleted_at IS NULL')

  await knex.raw('CREATE UNIQUE INDEX products_sku_live_unique ON products (organization_id, sku) WHERE deleted_at IS NULL')
  await knex.raw(
    'CREATE INDEX products_search_trgm ON products USING gin (organization_id, lower(name) gin_trgm_ops, lower(sku) gin_trgm_ops) WHERE deleted_at IS NULL'
  )
  await knex.raw('ALTER TABLE products ADD CONSTRAINT products_price_check CHECK (price IS NULL OR price >= 0)')
  await knex.raw('ALTER TABLE products ADD CONSTRAINT products_tax_percentage_check CHECK (tax_percentage IS NULL OR tax_percentage BETWEEN 0 AND 100)')
  await knex.raw(`ALTER TABLE products ADD CONSTRAINT products_currency_check CHECK (currency IS NULL OR currency ~ '^[A-Z]{3}$')`)

  await knex.raw('CREATE INDEX deals_status ON deals (organization_id, status) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX deals_pipeline ON deals (organization_id, pipeline_id) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX deals_contact ON deals (organization_id, contact_id) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX deals_company ON deals (organization_id, company_id) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX deals_owner ON deals (organization_id, owned_by_user_id) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX deals_expected_close_date ON deals (organization_id, expected_close_date) WHERE deleted_at IS NULL')
  await knex.raw('ALTER TABLE deals ADD CONSTRAINT deals_amount_check CHECK (amount >= 0)')
  await knex.raw(`ALTER TABLE deals ADD CONSTRAINT deals_currency_check CHECK (currency ~ '^[A-Z]{3}$')`)
  // A deal carries the date of its current outcome only: won_date iff won, lost_date iff lost.
  await knex.raw(`ALTER TABLE deals ADD CONSTRAINT deals_won_date_check CHECK ((status = 'won') = (won_date IS NOT NULL))`)
  await knex.raw(`ALTER TABLE deals ADD CONSTRAINT deals_lost_date_check CHECK ((status = 'lost') = (lost_date IS NOT NULL))`)

  await knex.raw('CREATE INDEX deal_products_product ON deal_products (organization_id, product_id) WHERE deleted_at IS NULL')
  await knex.raw('ALTER TABLE deal_products ADD CONSTRAINT deal_products_quantity_check CHECK (quantity > 0)')
  await knex.raw('ALTER TABLE deal_products ADD CONSTRAINT deal_products_price_check CHECK (price >= 0)')
  await knex.raw('ALTER TABLE deal_products ADD CONSTRAINT deal_products_tax_percentage_check CHECK (tax_percentage BETWEEN 0 AND 100)')
  // The discount column in use follows discount_type; the other one is null.
  await knex.raw(`ALTER TABLE deal_products ADD CONSTRAINT deal_products_discount_check CHECK (
    (discount_type IS NULL AND discount_amount IS NULL AND discount_percentage IS NULL)
    OR (discount_type = 'percentage' AND discount_percentage BETWEEN 0 AND 100 AND discount_amount IS NULL)
    OR (discount_type = 'fixed' AND discount_amount >= 0 AND discount_percentage IS NULL)
  )`)
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, constraint] of [
    ['deal_products', 'deal_products_discount_check'],
    ['deal_products', 'deal_products_tax_percentage_check'],
    ['deal_products', 'deal_products_price_check'],
    ['deal_products', 'deal_products_quantity_check'],
    ['deals', 'deals_lost_date_check'],
    ['deals', 'deals_won_date_check'],
    ['deals', 'deals_currency_check'],
    ['deals', 'deals_amount_check'],
    ['products', 'products_currency_check'],
    ['products', 'products_tax_percentage_check'],
    ['products', 'products_price_check']
  ]) {
    await knex.raw('ALTER TABLE ?? DROP CONSTRAINT IF EXISTS ??', [table, constraint])
  }
  for (const index of [
    'deal_products_product', 'deals_expected_close_date', 'deals_owner', 'deals_company', 'deals_contact', 'deals_pipeline',
    'deals_status', 'products_search_trgm', 'products_sku_live_unique', 'pipeline_stages_position', 'pipelines_position'
  ]) {
    await knex.raw('DROP INDEX IF EXISTS ??', [index])
  }
}
