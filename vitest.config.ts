import { defineConfig } from 'vitest/config'
import { HEAVY_TESTS } from './test/heavy.js'

// `npm test`: everything but the tests that start whole processes (test/heavy.ts, `npm run test:heavy`).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/citus/ runs on a Citus coordinator only (npm run test:citus).
    exclude: [...HEAVY_TESTS, 'test/citus/**'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // A worker runs its test files one after the other in one process: the application's modules
    // load once per worker instead of once per file. Each file still gets an application and a
    // database of its own (test/helpers/app.ts).
    isolate: false,
    // On embedded Postgres, two workers on a 2-core machine (vitest's default leaves a core to
    // itself): each spends most of its time in its own single-threaded database. On a server, the
    // files share one database, whose outbox any file's application may claim from: one worker.
    maxWorkers: process.env.DATABASE_URL ? 1 : 2,
    minWorkers: 1,
    maxConcurrency: 3,
    reporters: ['default'],
    // PGlite loads its extension bundles relative to its own files: keep it out of the transform.
    server: { deps: { external: [/@electric-sql\/pglite/, /knex-pglite/] } }
  }
})
