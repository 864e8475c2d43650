/**
 * The test files of `npm run test:heavy` (vitest.heavy.config.ts), left out of `npm test`: each
 * starts whole processes (`npm start`, `npm run seed`, builds, killed and restarted servers) on
 * databases of their own, or fills tables with tens of thousands of rows: minutes, not seconds.
 */
export const HEAVY_TESTS = [
  'test/docs/curl-examples.test.ts',
  'test/engine/trigger-families.test.ts',
  'test/mcp/stdio.test.ts',
  'test/platform/build.test.ts',
  'test/platform/create-user.test.ts',
  'test/platform/embedded-template.test.ts',
  'test/platform/faults.test.ts',
  'test/platform/outbox-restart.test.ts',
  'test/platform/process.test.ts',
  'test/platform/public-url.test.ts',
  'test/platform/seed.test.ts',
  'test/platform/startup-lines.test.ts',
  'test/platform/startup-refusals.test.ts',
  'test/privacy/purge-latency.test.ts',
  'test/services/large-tables.test.ts'
]
