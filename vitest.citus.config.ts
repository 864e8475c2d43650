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
  'test/channels/accounts.test.ts',
  'test/channels/messenger.test.ts',
  'test/channels/sms.test.ts',
  'test/channels/whatsapp.test.ts',
  'test/channels/webchat.test.ts',
  'test/channels/webchat-sessions.test.ts',
  'test/channels/webchat-identity.test.ts',
  'test/reservations/booking-links.test.ts',
  'test/services/invitations.test.ts',
  'test/services/invitation-page.test.ts',
  'test/webhooks/webhooks.test.ts',
  'test/services/activity-types.test.ts',
  'test/services/batch-writes.test.ts',
  'test/services/contacts-merge.test.ts',
  'test/services/contacts-phones.test.ts',
  'test/services/custom-fields.test.ts',
  'test/services/deal-products.test.ts',
  'test/services/invitation-acceptance.test.ts',
  'test/services/product-media.test.ts',
  'test/services/product-media-access.test.ts',
  'test/services/search.test.ts',
  'test/services/sync.test.ts',
  'test/imports/imports.test.ts',
  'test/imports/export.test.ts',
  'test/imports/sources.test.ts',
  'test/privacy/personal-data.test.ts',
  'test/privacy/retention.test.ts',
  'test/reservations/booking-page.test.ts',
  'test/webhooks/webhook-events.test.ts',
  'test/engine/answer-bytes.test.ts',
  'test/engine/new-column.test.ts',
  'test/engine/pages.test.ts',
  'test/engine/trigger-families.test.ts',
  'test/engine/write-guards.test.ts',
  'test/platform/idempotency.test.ts',
  'test/platform/every-tenant-service.test.ts',
  'test/platform/organizations.test.ts',
  'test/platform/accounts.test.ts',
  'test/platform/api-key-scopes.test.ts',
  'test/platform/read-all.test.ts',
  'test/realtime/events.test.ts',
  'test/realtime/cascaded-deletes.test.ts',
  'test/realtime/membership-events.test.ts',
  'test/citus/isolate-tenant.test.ts',
  'test/citus/convert.test.ts',
  'test/citus/outbox-two-services.test.ts',
  // Starts two service processes (npm start) on the coordinator database.
  'test/citus/outbox-two-processes.test.ts'
]

process.env.CITUS_MULTI_SHARD_LEVEL ??= 'error'

export default defineConfig({ ...base, test: { ...base.test, include: CITUS_TESTS, exclude: [] } })
