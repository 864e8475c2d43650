/**
 * The order of the reference's sections (the document's `tags`, which Swagger UI follows): the
 * CRM's records first, as a user looks for them, then the inbox, bookings, assistants and
 * integrations, the accounts and access, the public routes, and last what people do not call
 * themselves (the MCP server, the providers' webhooks, the health check). A section not named
 * here goes before the accounts, in the order it first appears.
 */
const SECTIONS: { tags: (string | RegExp)[]; description?: string }[] = [
  { tags: ['contacts', 'companies', 'deals', 'deal-products', 'pipelines', 'pipeline-stages', 'products', /^product-media/, 'activities', 'activity-types', 'custom-fields'] },
  { tags: ['conversations', /^conversation-messages-(?!transform)/, /^conversation-messages-transform/, 'conversation-predefined-messages', 'conversation-files', 'conversations-bulk-actions', 'automations', 'automations-executions', 'channel-accounts'] },
  { tags: ['reservations', /^reservation-/] },
  { tags: [/^ai-assistant/] },
  { tags: ['webhook-subscriptions', 'webhook-deliveries', 'storage-url-signing'] },
  { tags: ['authentication', 'users', 'organizations', 'organizations-users', 'organizations-users-invites', 'api-keys'] },
  { tags: [/^public/] }
]

/** What the last sections are for: nobody is left to guess why they are there. */
const LAST: Record<string, string> = {
  mcp: 'For AI assistants\' MCP clients: the CRM and reservation tools over JSON-RPC (docs/integrations.md).',
  'channel webhooks': 'Called by Meta and Twilio, not by API users: the addresses to give each provider (docs/channels.md).',
  health: 'For load balancers and probes.'
}

const ACCOUNTS = SECTIONS.findIndex((section) => section.tags.includes('authentication'))

/** Where a tag goes: [section, position in it]; unknown tags before the accounts, known last ones at the end. */
function rankOf(tag: string): [number, number] {
  const last = Object.keys(LAST).indexOf(tag)
  if (last >= 0) return [SECTIONS.length, last]
  for (const [section, { tags }] of SECTIONS.entries()) {
    const position = tags.findIndex((pattern) => (typeof pattern === 'string' ? pattern === tag : pattern.test(tag)))
    if (position >= 0) return [section, position]
  }
  return [ACCOUNTS - 0.5, 0]
}

/** The document's `tags`: every tag its operations use, in the order above (stable within a rank). */
export function orderedTags(used: string[]): { name: string; description?: string }[] {
  return used
    .map((name, index) => ({ name, rank: rankOf(name), index }))
    .sort((a, b) => a.rank[0] - b.rank[0] || a.rank[1] - b.rank[1] || a.index - b.index)
    .map(({ name }) => (LAST[name] ? { name, description: LAST[name] } : { name }))
}

/** Who uses each way of signing a request, as the Authorize dialog shows it. */
export const SECURITY_SCHEMES = {
  apiKey: {
    type: 'apiKey', in: 'header', name: 'x-api-key',
    description: 'For integrations and scripts: an API key of one organization (crm_…), made by its owner or an admin with POST /api-keys. Every call acts in that organization.'
  },
  bearer: {
    type: 'http', scheme: 'bearer', bearerFormat: 'JWT',
    description: 'For people and the apps they sign in to: the accessToken of POST /authentication. It acts in every organization of the user, so list and create calls name organization_id. Only /mcp also takes an API key this way.'
  }
}
