import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../../declarations.js'
import { limitPerAddress } from '../../../rate-limit/per-address.js'
import { WebchatConfigService, WebchatMessageService, WebchatSessionService } from './public-webchat.class.js'
import {
  webchatConfigQueryValidator, webchatConfigSchema, webchatMessageDataSchema, webchatMessageDataValidator, webchatMessageListSchema, webchatMessageQueryValidator,
  webchatMessageSchema, webchatSessionDataSchema, webchatSessionDataValidator, webchatSessionSchema
} from './public-webchat.schema.js'

export * from './public-webchat.class.js'
export * from './public-webchat.schema.js'

export const webchatSessionPath = 'public/webchat/:widgetToken/sessions'
export const webchatMessagePath = 'public/webchat/messages'
export const webchatConfigPath = 'public/webchat/:widgetToken/config'

const json = (schema: unknown) => ({ content: { 'application/json': { schema: JSON.parse(JSON.stringify(schema)) } } })
const tooMany = { 429: { description: 'Too many requests from this address' } }
const visitorToken = { name: 'X-Visitor-Token', in: 'header', required: true, schema: { type: 'string' } }
const operation = (summary: string, body: Record<string, unknown>) => ({ tags: ['public web chat'], summary, security: [], ...body })
const widgetToken = { name: 'widgetToken', in: 'path', required: true, schema: { type: 'string' } }
const sessionGone = 'Missing or unknown visitor token, or its session ended (the browser opened a new one) or expired (unused for WEBCHAT_SESSION_IDLE_S)'
const chatClosed = 'The conversation is blocked or deleted, or the widget deactivated or deleted'
const refused = "The page's Origin may not open this widget's chat (allowed_origins; the service's own origin only from the widget's demo page)"

const PATHS = {
  '/public/webchat/widget.js': {
    get: operation('The chat widget script: add it to a page with data-widget-token', {
      description: 'A self-contained script (no other loads, no eval): <script src="<PUBLIC_URL>/public/webchat/widget.js" data-widget-token="<widget_token>" async></script>. ' +
        'Served gzip-compressed to clients that accept it, with an ETag and a short public cache lifetime.',
      responses: {
        200: { description: 'The script', content: { 'text/javascript': { schema: { type: 'string' }, example: '"use strict";(()=>{ /* the widget */ })();' } } },
        304: { description: 'Not modified (If-None-Match)' }
      }
    })
  },
  '/public/webchat/{widgetToken}/config': {
    get: operation("What the widget shows before a session: title, welcome message, colour and corner", {
      description: 'Answered to any page when the request has no Origin (a non-browser client, or a page of the service itself); refused with 403 to a browser page whose Origin may not open the chat.',
      parameters: [widgetToken, { name: 'Origin', in: 'header', required: false, schema: { type: 'string' } }],
      responses: {
        200: { description: "The widget's public settings", ...json(webchatConfigSchema) },
        403: { description: refused }, 404: { description: 'No active widget with this token' }, ...tooMany
      }
    })
  },
  '/public/webchat/{widgetToken}/demo': {
    get: operation("A plain page with the widget on it, to try it before installing it on a site", {
      description: "The page is on the service's own origin (PUBLIC_URL), which may open this widget's chat from this page only.",
      parameters: [widgetToken],
      responses: {
        200: { description: 'The page', content: { 'text/html': { schema: { type: 'string' }, example: '<!doctype html><html lang="en">…<script src="../widget.js" data-widget-token="…" async></script></html>' } } },
        404: { description: 'No active widget with this token' }, ...tooMany
      }
    })
  },
  '/public/webchat/{widgetToken}/sessions': {
    post: operation("A site visitor opens the chat: a new contact and conversation, or with a signed user id that user's contact and thread", {
      description: 'name and email are claims, recorded on the new contact of an anonymous session and never matched. ' +
        "user_id with user_hash (hex HMAC-SHA256 of user_id under the widget's identity_secret) joins the contact whose external_id is user_id, and its web-chat thread.",
      parameters: [
        widgetToken,
        { name: 'Origin', in: 'header', required: false, schema: { type: 'string' }, description: "checked against allowed_origins (a browser-side restriction, not an authentication)" },
        { name: 'X-Visitor-Token', in: 'header', required: false, schema: { type: 'string' }, description: "the browser's previous visitor token of this widget, if any: that session ends" }
      ],
      requestBody: json(webchatSessionDataSchema),
      responses: {
        201: { description: 'The visitor token and the conversation', ...json(webchatSessionSchema) },
        400: { description: 'Invalid body; user_id without user_hash or the reverse; a widget without an identity secret' },
        401: { description: 'user_hash is not the signature of user_id' },
        403: { description: `${refused}; the signed user's thread is blocked` },
        404: { description: 'No active widget with this token' }, ...tooMany
      }
    })
  },
  '/public/webchat/messages': {
    get: operation("The visitor's conversation, oldest first, without notes", {
      parameters: [visitorToken,
        { name: 'created_at[$gt]', in: 'query', required: false, schema: { type: 'string', format: 'date-time' }, description: 'only messages after this time' },
        { name: 'id[$gt]', in: 'query', required: false, schema: { type: 'integer', minimum: 1 }, description: 'only messages after this one' },
        { name: '$limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 50, default: 50 } }],
      responses: {
        200: { description: 'The messages', ...json(webchatMessageListSchema) }, 401: { description: sessionGone },
        403: { description: chatClosed }, ...tooMany
      }
    }),
    post: operation('The visitor writes', {
      parameters: [visitorToken],
      requestBody: json(webchatMessageDataSchema),
      responses: {
        201: { description: 'The stored message', ...json(webchatMessageSchema) }, 400: { description: 'Invalid body' },
        401: { description: sessionGone }, 403: { description: chatClosed }, ...tooMany
      }
    })
  }
}

/** The site widget's public API: no credentials but the widget and visitor tokens, rate limited per address. */
export const publicWebchat = (app: Application) => {
  // HTTP routes by nature (limited per client address by Koa middleware): refused over Socket.io (restOnly).
  const koa = { before: [limitPerAddress(app)] }
  app.use(webchatSessionPath, new WebchatSessionService(app), {
    methods: ['create'], events: [], koa, restOnly: true, secretFields: ['visitor_token'], docs: { description: 'The web-chat widget', schemas: {}, paths: PATHS }
  } as any)
  app.use(webchatMessagePath, new WebchatMessageService(app), { methods: ['find', 'create'], events: [], koa, restOnly: true } as any)
  app.use(webchatConfigPath, new WebchatConfigService(app), { methods: ['find'], events: [], koa, restOnly: true } as any)
  app.service(webchatConfigPath).hooks({ before: { find: [schemaHooks.validateQuery(webchatConfigQueryValidator)] } })
  app.service(webchatSessionPath).hooks({ before: { create: [schemaHooks.validateData(webchatSessionDataValidator)] } })
  app.service(webchatMessagePath).hooks({
    before: { find: [schemaHooks.validateQuery(webchatMessageQueryValidator)], create: [schemaHooks.validateData(webchatMessageDataValidator)] }
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [webchatSessionPath]: WebchatSessionService
    [webchatMessagePath]: WebchatMessageService
    [webchatConfigPath]: WebchatConfigService
  }
}
