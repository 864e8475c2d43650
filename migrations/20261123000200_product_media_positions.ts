import type { Knex } from 'knex'

// Positions are unique per product among live media (gaps allowed): concurrent uploads used
// to compute the same "next" position. Products that already hold duplicates are renumbered
// 0..n-1 in their current display order (position, then id) before the unique index is built.
// The unique index replaces the plain one on the same columns.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    UPDATE product_media AS m SET position = renumbered.position
    FROM (
      SELECT organization_id, id, (row_number() OVER (PARTITION BY organization_id, product_id ORDER BY position, id) - 1)::integer AS position
      FROM product_media
      WHERE deleted_at IS NULL
        AND (organization_id, product_id) IN (
          SELECT organization_id, product_id FROM product_media WHERE deleted_at IS NULL
          GROUP BY organization_id, product_id, position HAVING count(*) > 1
        )
    ) AS renumbered
    WHERE m.organization_id = renumbered.organization_id AND m.id = renumbered.id AND m.position <> renumbered.position`)
  await knex.raw('CREATE UNIQUE INDEX product_media_live_position_unique ON product_media (organization_id, product_id, position) WHERE deleted_at IS NULL')
  await knex.raw('DROP INDEX IF EXISTS product_media_product_position_index')
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX product_media_product_position_index ON product_media (organization_id, product_id, position) WHERE deleted_at IS NULL')
  await knex.raw('DROP INDEX IF EXISTS product_media_live_position_unique')
}
