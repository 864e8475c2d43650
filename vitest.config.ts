import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Concurrent tests start whole processes (npm start, seeds, builds), each a fresh embedded
    // database: more than three at once on a 2-core machine starved them past their timeouts.
    maxConcurrency: 3,
    reporters: ['default'],
    // PGlite loads its extension bundles relative to its own files: keep it out of the transform.
    server: { deps: { external: [/@electric-sql\/pglite/, /knex-pglite/] } }
  }
})
