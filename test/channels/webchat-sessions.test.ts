import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'
import type { Listener } from '../helpers/sockets.js'
import { connectWebchat } from './fixtures.js'

/** How long a visitor's session may stay unused in the idle test's app (WEBCHAT_SESSION_IDLE_S). */
const IDLE_S = 2
const CUT_OFF_BOUND_MS = 5_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const within = <T>(ms: number, promise: Promise<T>, what: string) =>
  Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what}: not within ${ms} ms`)))])

describe('the life of a web-chat session', () => {
  let t: TestApp
  let sockets: Awaited<ReturnType<typeof serveSockets>>
  let acme: Tenant
  /** An app whose sessions expire after IDLE_S, with its own sockets and tenant. */
  let idle: { t: TestApp; sockets: Awaited<ReturnType<typeof serveSockets>>; acme: Tenant }

  beforeAll(async () => {
    const idleApp = await startApp({ publicRateLimitPoints: 1000, webchatSessionIdleS: IDLE_S })
    idle = { t: idleApp, sockets: await serveSockets(idleApp), acme: await createTenant(idleApp, 'Idle') }
    t = await startApp({ publicRateLimitPoints: 1000 })
    sockets = await serveSockets(t)
    acme = await createTenant(t, 'Acme')
  })
  afterAll(async () => {
    await sockets.close()
    await t.close()
    await idle.sockets.close()
    await idle.t.close()
  })

  /** Runs fn on the idle test's app. */
  async function onIdleApp(fn: () => Promise<void>) {
    const main = { t, sockets, acme }
    ;({ t, sockets, acme } = idle)
    try {
      await fn()
    } finally {
      ;({ t, sockets, acme } = main)
    }
  }

  const open = async (widget: { widget_token: string }, previousToken?: string) => {
    const req = t.http().post(`/public/webchat/${widget.widget_token}/sessions`)
    const res = await (previousToken ? req.set('X-Visitor-Token', previousToken) : req).send({ name: 'Visitor' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return res.body as { visitor_token: string; conversation_id: number }
  }
  const say = (token: string, content = 'Hello?') => t.http().post('/public/webchat/messages').set('X-Visitor-Token', token).send({ content })
  const thread = (token: string) => t.http().get('/public/webchat/messages').set('X-Visitor-Token', token)
  const inbox = async (conversationId: number) =>
    (await t.http().get('/conversation-messages-webchat').set(acme.key).query({ conversation_id: conversationId })).body.data.map((m: any) => m.content)

  /** A visitor who has written once and listens on a socket. */
  async function chatting(widget: { widget_token: string }) {
    const session = await open(widget)
    expect((await say(session.visitor_token, 'First')).status).toBe(201)
    const listener: Listener = await sockets.listen({ visitorToken: session.visitor_token })
    return { ...session, listener }
  }

  async function expectRefused(token: string, status: number, message: string) {
    for (const res of [await thread(token), await say(token, 'Anyone?')]) {
      expect(res.status, JSON.stringify(res.body)).toBe(status)
      expect(res.body.message).toBe(message)
    }
    await expect(sockets.listen({ visitorToken: token })).rejects.toThrow(message)
  }

  it('when a widget is deactivated, then its visitors are refused (403), stores nothing and their sockets are cut off within 5 s; activated again, their sessions go on', async () => {
    const widget = await connectWebchat(t, acme)
    const visitor = await chatting(widget)
    await t.http().patch(`/channel-accounts/${widget.id}`).set(acme.key).send({ is_active: false }).expect(200)
    await within(CUT_OFF_BOUND_MS, visitor.listener.cutOff, 'the socket of a deactivated widget cut off')
    await expectRefused(visitor.visitor_token, 403, 'This chat is closed')
    expect(await inbox(visitor.conversation_id)).toEqual(['First'])

    await t.http().patch(`/channel-accounts/${widget.id}`).set(acme.key).send({ is_active: true }).expect(200)
    expect((await say(visitor.visitor_token, 'Back again')).status).toBe(201)
  })

  it('when a widget is deleted, then its visitors are refused (403), store nothing and their sockets are cut off within 5 s', async () => {
    const widget = await connectWebchat(t, acme)
    const visitor = await chatting(widget)
    await t.http().delete(`/channel-accounts/${widget.id}`).set(acme.key).expect(200)
    await within(CUT_OFF_BOUND_MS, visitor.listener.cutOff, 'the socket of a deleted widget cut off')
    await expectRefused(visitor.visitor_token, 403, 'This chat is closed')
    expect(await inbox(visitor.conversation_id)).toEqual(['First'])
  })

  it('when a session is used, then it stays open past the idle limit; left unused longer than WEBCHAT_SESSION_IDLE_S, it expires (401) and its socket is cut off', () => onIdleApp(async () => {
    const widget = await connectWebchat(t, acme)
    const visitor = await chatting(widget)
    for (let i = 0; i < 3; i++) {
      await sleep(IDLE_S * 1000 * 0.6)
      expect((await thread(visitor.visitor_token)).status).toBe(200)
    }
    await within(IDLE_S * 1000 + CUT_OFF_BOUND_MS, visitor.listener.cutOff, 'the socket of an idle session cut off')
    await expectRefused(visitor.visitor_token, 401, 'This chat session has expired')
    expect(await inbox(visitor.conversation_id)).toEqual(['First'])
  }))

  it('when the same browser opens a new session presenting its previous token, then the earlier session ends (401, socket cut off) and the new one works', async () => {
    const widget = await connectWebchat(t, acme)
    const earlier = await chatting(widget)
    const later = await open(widget, earlier.visitor_token)
    await within(CUT_OFF_BOUND_MS, earlier.listener.cutOff, 'the socket of the ended session cut off')
    await expectRefused(earlier.visitor_token, 401, 'This chat session has ended')
    expect((await say(later.visitor_token, 'New session')).status).toBe(201)
    expect(await inbox(later.conversation_id)).toEqual(['New session'])
  })

  it("when a new session presents a token of another widget or an unknown one, then it opens and ends nothing", async () => {
    const widget = await connectWebchat(t, acme)
    const otherWidget = await connectWebchat(t, acme)
    const elsewhere = await open(otherWidget)
    await open(widget, elsewhere.visitor_token)
    await open(widget, 'not-a-visitor-token')
    expect((await say(elsewhere.visitor_token)).status).toBe(201)
  })
})
