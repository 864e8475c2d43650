import { MethodNotAllowed, NotAuthenticated, NotFound, Forbidden, FeathersError } from '@feathersjs/errors'
import type { Context, Next } from 'koa'
import type { Application } from '../../../declarations.js'
import { enqueueJob } from '../../../outbox/index.js'
import type { JobOutcome, OutboxJob } from '../../../outbox/index.js'
import { META_CHANNELS, webhookUrlOf } from '../channel-accounts/channel-accounts.schema.js'
import { requestLog } from '../../../logger.js'
import { isLive, loadAccount } from './accounts.js'
import { receiveEvents } from './inbound.js'
import { metaChallenge } from './providers/meta.js'
import { ADAPTERS } from './providers/index.js'
import type { ChannelAccountRecord, InboundRequest } from './providers/types.js'

export const INBOUND_TOPIC = 'channel-inbound'

/** /webhooks/<channel>/<key>, and Twilio's status callbacks at /webhooks/sms/<key>/status. */
const WEBHOOK_PATH = /^\/webhooks\/(whatsapp|messenger|instagram|sms)\/([A-Za-z0-9_-]{16,128})(\/status)?\/?$/
const MAX_BODY_BYTES = 1024 * 1024

interface InboundPayload {
  account_id: number
  /** The request body as received, base64. */
  body: string
  variant: InboundRequest['variant']
}

class PayloadTooLarge extends FeathersError {
  constructor() {
    super('The webhook body is larger than 1 MB', 'PayloadTooLarge', 413, 'payload-too-large', {})
  }
}

/** The body's bytes exactly as received (signatures are computed over them), up to a limit. */
async function rawBodyOf(ctx: Context): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of ctx.req) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) throw new PayloadTooLarge()
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}

/** What each provider expects as an acknowledgement. */
function acknowledge(ctx: Context, account: ChannelAccountRecord) {
  ctx.status = 200
  if (account.channel === 'sms') {
    ctx.type = 'text/xml'
    ctx.body = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>'
  } else {
    ctx.type = 'text/plain'
    ctx.body = 'EVENT_RECEIVED'
  }
}

/**
 * The providers' webhooks, in front of the body parser: the account comes from the URL's key
 * (never from a payload field), the signature is checked over the raw bytes before anything is
 * parsed, and a verified request is written to the outbox and acknowledged at once: its messages
 * and statuses are stored by the worker right after (retried there, never making the provider
 * wait or retry). A request for a deleted or inactive account is acknowledged and ignored, so the
 * provider stops retrying it.
 */
export const channelWebhooks = (app: Application) => (ctx: Context, next: Next) => {
  const match = WEBHOOK_PATH.exec(ctx.path)
  return match ? answerWebhook(app, ctx, match) : next()
}

async function answerWebhook(app: Application, ctx: Context, [, channel, key, statusPath]: RegExpExecArray) {
  const account = await loadAccount(app, { webhook_key: key, channel })
  if (!account || (statusPath && channel !== 'sms')) throw new NotFound('No webhook at this address')
  if (ctx.method === 'GET' && META_CHANNELS.includes(account.channel) && !account.deleted_at) {
    const challenge = metaChallenge(ctx.query, account)
    if (challenge === undefined) throw new Forbidden('The verify token does not match')
    ctx.status = 200
    ctx.type = 'text/plain'
    ctx.body = challenge
    return
  }
  if (ctx.method !== 'POST') throw new MethodNotAllowed('Webhooks are POSTed')

  const rawBody = await rawBodyOf(ctx)
  if (account.deleted_at || !account.is_active) {
    requestLog(app.get('logger'), ctx.state.requestId).info({ channel_account_id: account.id, channel }, 'channels: webhook for a deleted or inactive account acknowledged and ignored')
    return acknowledge(ctx, account)
  }
  const variant = statusPath ? 'status' : 'message'
  const request: InboundRequest = { rawBody, headers: ctx.headers, url: `${webhookUrlOf(app.get('publicUrl'), account)}${statusPath ? '/status' : ''}`, variant }
  if (!ADAPTERS[account.channel]!.verify(request, account)) throw new NotAuthenticated('Missing or invalid webhook signature')

  await enqueueJob(app.get('knex'), {
    topic: INBOUND_TOPIC,
    kind: channel,
    organizationId: account.organization_id,
    payload: { account_id: account.id, body: rawBody.toString('base64'), variant } satisfies InboundPayload,
    // One account's requests are stored in the order they came.
    orderingKey: `inbound:${account.id}`
  })
  app.get('outbox').kick()
  acknowledge(ctx, account)
}

/** Stores the messages and statuses of one acknowledged webhook request. */
async function receive(app: Application, job: OutboxJob<InboundPayload>): Promise<JobOutcome> {
  const account = await loadAccount(app, { organization_id: job.organization_id, id: job.payload.account_id })
  if (!isLive(account)) return { status: 'done', label: 'ignored' }
  const adapter = ADAPTERS[account.channel]!
  const rawBody = Buffer.from(job.payload.body, 'base64')
  let events
  try {
    events = adapter.parse({ rawBody, headers: {}, url: '', variant: job.payload.variant }, account)
  } catch (error: any) {
    return { status: 'failed', error: `unreadable webhook body: ${String(error?.message ?? error)}` }
  }
  await receiveEvents(app, account, events)
  return { status: 'done', label: 'received', result: { events: events.length } }
}

/** The handler of channel-inbound jobs on the application's outbox worker. */
export const channelInbound = (app: Application) => {
  app.get('outbox').register({
    topic: INBOUND_TOPIC,
    maxAttempts: app.get('messageMaxAttempts'),
    retryBaseMs: app.get('messageRetryBaseMs'),
    labels: ['received', 'ignored'],
    run: (job) => receive(app, job as OutboxJob<InboundPayload>)
  })
}

const keyParam = { name: 'key', in: 'path', required: true, schema: { type: 'string' }, description: "the random key of the account's webhook_url" }
const webhookOperation = (summary: string, operation: Record<string, unknown>) => ({ tags: ['channel webhooks'], summary, security: [], ...operation })
const metaPost = webhookOperation('A Meta webhook delivery (messages and statuses), signed with the app secret', {
  parameters: [keyParam, { name: 'X-Hub-Signature-256', in: 'header', required: true, schema: { type: 'string' }, description: 'sha256=<hex HMAC-SHA256 of the raw body with the app secret>' }],
  requestBody: {
    content: {
      'application/json': {
        schema: { type: 'object', description: 'entry[].changes[].value (WhatsApp) or entry[].messaging[] (Messenger, Instagram)' },
        example: {
          object: 'whatsapp_business_account',
          entry: [{
            id: '102290129340398',
            changes: [{
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '15550783881', phone_number_id: '106540352242922' },
                contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }],
                messages: [{ from: '16505551234', id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=', timestamp: '1749416383', type: 'text', text: { body: 'Does it come in another color?' } }]
              }
            }]
          }]
        }
      }
    }
  },
  responses: {
    200: { description: 'EVENT_RECEIVED: stored right after by the worker (also for a deleted or inactive account, ignored)' },
    401: { description: 'Missing or invalid signature: nothing stored' }, 404: { description: 'No account with this key' }
  }
})
const metaGet = webhookOperation("Meta's subscription handshake", {
  parameters: [keyParam, ...['hub.mode', 'hub.verify_token', 'hub.challenge'].map((name) => ({ name, in: 'query', required: true, schema: { type: 'string' } }))],
  responses: { 200: { description: 'hub.challenge, as text/plain', content: { 'text/plain': { schema: { type: 'string' }, example: '1158201444' } } }, 403: { description: 'The verify token does not match' } }
})
const twilioPost = (summary: string, fields: string, example: Record<string, string>) => webhookOperation(summary, {
  parameters: [keyParam, { name: 'X-Twilio-Signature', in: 'header', required: true, schema: { type: 'string' }, description: "Twilio's signature of the URL and the form with the auth token" }],
  requestBody: { content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', description: fields }, example: example } } },
  responses: { 200: { description: 'An empty TwiML <Response/>' }, 401: { description: 'Missing or invalid signature: nothing stored' }, 404: { description: 'No account with this key' } }
})

/** The webhook routes in the OpenAPI document (they are Koa middleware, not services). */
export const WEBHOOK_DOCS: Record<string, unknown> = {
  ...Object.fromEntries(['whatsapp', 'messenger', 'instagram'].map((channel) => [`/webhooks/${channel}/{key}`, { get: metaGet, post: metaPost }])),
  '/webhooks/sms/{key}': {
    post: twilioPost('An incoming SMS or MMS from Twilio', 'From, To, Body, MessageSid, NumMedia, MediaUrl0…, MediaContentType0…', {
      From: '+14155550111', To: '+14155550100', Body: 'Is my order ready?', MessageSid: 'SM1f0e8ae6ade43cb3c0ce4525424e404f', NumMedia: '0'
    })
  },
  '/webhooks/sms/{key}/status': {
    post: twilioPost("Twilio's status callback of a message we sent", 'MessageSid, MessageStatus, ErrorCode', {
      MessageSid: 'SM1f0e8ae6ade43cb3c0ce4525424e404f', MessageStatus: 'delivered'
    })
  }
}
