import { defineConfig } from 'vitest/config'
import { HEAVY_TESTS } from './test/heavy.js'

// `npm run test:heavy`: the tests that start whole processes (npm start, seeds, builds, fault
// injection), each on a fresh database of its own.
export default defineConfig({
  test: {
    include: HEAVY_TESTS,
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Concurrent tests start whole processes (npm start, seeds, builds), each a fresh embedded
    // database: more than three at once on a 2-core machine starved them past their timeouts.
    maxConcurrency: 3,
    reporters: ['default'],
    server: { deps: { external: [/@electric-sql\/pglite/, /knex-pglite/] } }
  }
})
