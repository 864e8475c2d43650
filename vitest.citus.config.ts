import { defineConfig } from 'vitest/config'
import base from './vitest.config.js'

/**
 * `npm run test:citus` (scripts/citus.sh test): the tenant tests against a Citus coordinator with
 * two workers, DATABASE_URL naming a fresh database on it. Every statement a request sends that
 * would touch more than one shard is refused (CITUS_MULTI_SHARD_LEVEL=error on the requests'
 * pool), so a passing test proves its requests are single-shard (router) statements.
 */
export const CITUS_TESTS = [
  'test/services/companies.test.ts',
  'test/services/contacts.test.ts',
  'test/services/deals.test.ts',
  'test/services/activities.test.ts',
  'test/services/activity-lists.test.ts',
  'test/services/pipelines.test.ts',
  'test/services/products.test.ts',
  'test/conversations/automations.test.ts',
  'test/conversations/bulk-actions.test.ts',
  'test/conversations/conversations.test.ts',
  'test/conversations/files.test.ts',
  'test/conversations/messages.test.ts',
  'test/conversations/predefined-messages.test.ts',
  'test/conversations/realtime.test.ts',
  'test/channels/credentials.test.ts',
  'test/channels/inbound-failures.test.ts',
  'test/channels/phone-numbers.test.ts',
  'test/channels/webchat-widget-parts.test.ts',
  'test/reservations/ai-assistants.test.ts',
  'test/reservations/collections.test.ts',
  'test/reservations/reservations.test.ts',
  'test/reservations/salon.test.ts',
  'test/reservations/slots.test.ts',
  'test/webhooks/addresses.test.ts',
  'test/webhooks/subscription-limit.test.ts',
  'test/citus/isolate-tenant.test.ts',
  'test/citus/outbox-two-services.test.ts',
  // Starts two service processes (npm start) on the coordinator database.
  'test/citus/outbox-two-processes.test.ts'
]

process.env.CITUS_MULTI_SHARD_LEVEL ??= 'error'

export default defineConfig({ ...base, test: { ...base.test, include: CITUS_TESTS, exclude: [] } })
