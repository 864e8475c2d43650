import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { feathers } from '@feathersjs/feathers'
import socketioModule from '@feathersjs/socketio-client'
import authenticationModule from '@feathersjs/authentication-client'
import restModule from '@feathersjs/rest-client'
import { io } from 'socket.io-client'
import type { Socket } from 'socket.io-client'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'

// The packages are CommonJS with a default export; under NodeNext the callable sits on .default.
const socketio: typeof socketioModule.default = (socketioModule as any).default ?? socketioModule
const authentication: typeof authenticationModule.default = (authenticationModule as any).default ?? authenticationModule
const rest: typeof restModule.default = (restModule as any).default ?? restModule

/** A revoked credential is refused on the socket's next call within this bound. */
const REVOCATION_BOUND_MS = 5_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The standard Feathers client over Socket.io, as a dashboard builds it: @feathersjs/feathers,
 * @feathersjs/socketio-client and @feathersjs/authentication-client, unchanged. `auth` is the
 * optional handshake credential.
 */
function socketClient(url: string, sockets: Socket[], auth?: Record<string, string>) {
  const socket = io(url, { transports: ['websocket'], forceNew: true, reconnection: false, ...(auth ? { auth } : {}) })
  sockets.push(socket)
  // socket.io-client resolves to its ESM build here and to its CommonJS build in the package's types: the same class.
  const connection = socketio(socket as any, { timeout: 10_000 })
  const client = feathers()
  client.configure(connection)
  client.configure(authentication())
  client.use('contacts', connection.service('contacts'), { methods: ['find', 'get', 'create', 'patch', 'remove', 'search'] })
  // When the server ends a socket, the client re-authenticates on its own: no test waits for that.
  socket.on('disconnect', () => Promise.resolve(client.get('authentication')).catch(() => undefined))
  const events: { event: string; data: any }[] = []
  socket.onAny((event: string, data: any) => events.push({ event, data }))
  return { client: client as any, socket, events }
}

/** One raw socket call, with the error object exactly as it travelled. */
const call = (socket: Socket, method: string, path: string, ...args: unknown[]) =>
  new Promise<{ error?: any; result?: any }>((resolve) => socket.emit(method, path, ...args, (error: any, result: any) => resolve({ error: error ?? undefined, result })))

/** Settles once the socket is connected (its handshake accepted). */
const connected = (socket: Socket) => new Promise<void>((resolve, reject) => {
  if (socket.connected) return resolve()
  socket.on('connect', () => resolve())
  socket.on('connect_error', reject)
})

describe('the standard Feathers client over Socket.io and REST', () => {
  let t: TestApp
  let server: Awaited<ReturnType<typeof serveSockets>>
  let acme: Tenant
  let globex: Tenant
  const sockets: Socket[] = []

  beforeAll(async () => {
    t = await startApp()
    server = await serveSockets(t)
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
  })
  afterAll(async () => {
    for (const socket of sockets) socket.disconnect()
    await server.close()
    await t.close()
  })

  const conversationsHeard = (events: { event: string; data: any }[]) => events.filter((e) => e.event === 'conversations created').map((e) => e.data.id as number)

  async function newConversation(tenant: Tenant) {
    const contact = await t.http().post('/contacts').set(tenant.key).send({ first_name: 'Probe' })
    const conversation = await t.http().post('/conversations').set(tenant.key).send({ channel: 'sms', contact_id: contact.body.id })
    expect(conversation.status, JSON.stringify(conversation.body)).toBe(201)
    return conversation.body.id as number
  }

  it('when a socket signs in with e-mail and password, then it lists its organization\'s contacts, hears its organization\'s events, re-authenticates, and after logout is refused and hears nothing', async () => {
    const { client, events } = socketClient(server.url, sockets)
    const mine = await t.http().post('/contacts').set(acme.key).send({ first_name: 'Mine' })
    const theirs = await t.http().post('/contacts').set(globex.key).send({ first_name: 'Theirs' })

    const login = await client.authenticate({ strategy: 'local', email: acme.user.email, password: acme.password })
    expect(login.accessToken).toEqual(expect.any(String))
    expect(login.user).toMatchObject({ id: acme.user.id, email: acme.user.email })
    expect(login.user.password).toBeUndefined()

    const page = await client.service('contacts').find({ query: { organization_id: acme.organization.id, $limit: 100 } })
    const ids = page.data.map((contact: { id: number }) => contact.id)
    expect(ids).toContain(mine.body.id)
    expect(ids).not.toContain(theirs.body.id)

    const heard = await newConversation(acme)
    await newConversation(globex)
    await vi.waitFor(() => expect(conversationsHeard(events)).toEqual([heard]))

    const again = await client.reAuthenticate(true)
    expect(again.accessToken).toBe(login.accessToken)
    expect((await client.service('contacts').get(mine.body.id)).first_name).toBe('Mine')

    await client.logout()
    await expect(client.service('contacts').find({ query: { organization_id: acme.organization.id } })).rejects.toMatchObject({ code: 401, name: 'NotAuthenticated' })
    await newConversation(acme)
    await sleep(300)
    expect(conversationsHeard(events)).toEqual([heard])
  })

  it('when a socket signs in with a JWT or an API key, then its calls act as that credential; an API key gets no token and logs out too', async () => {
    const byJwt = socketClient(server.url, sockets)
    const jwt = await byJwt.client.authenticate({ strategy: 'jwt', accessToken: acme.token })
    expect(jwt.accessToken).toBe(acme.token)
    expect((await byJwt.client.service('contacts').find({ query: { organization_id: acme.organization.id } })).total).toBeGreaterThanOrEqual(0)

    const byKey = socketClient(server.url, sockets)
    const key = await byKey.client.authenticate({ strategy: 'api-key', apiKey: globex.apiKey })
    expect(key.accessToken).toBeUndefined()
    expect(key.user).toMatchObject({ id: globex.user.id })
    const created = await byKey.client.service('contacts').create({ first_name: 'Keyed' })
    expect(created.organization_id).toBe(globex.organization.id)
    const heard = await newConversation(globex)
    await vi.waitFor(() => expect(conversationsHeard(byKey.events)).toEqual([heard]))

    await byKey.client.logout()
    await expect(byKey.client.service('contacts').find()).rejects.toMatchObject({ code: 401 })
    await expect(byKey.client.authenticate({ strategy: 'api-key', apiKey: 'crm_nope_nope' })).rejects.toMatchObject({ code: 401 })
  })

  it('when the organization subscribed to contact events, then a create and a patch over the socket store their events as REST does, and a refused reference writes neither', async () => {
    const tenant = await createTenant(t, 'Subscribed')
    const other = (await t.http().post('/companies').set(globex.key).send({ name: 'Not Yours' }).expect(201)).body
    t.app.set('webhookAllowPrivate', true)
    const subscription = (await t.http().post('/webhook-subscriptions').set(tenant.key)
      .send({ url: 'http://127.0.0.1:9/hooks', events: ['contacts.created', 'contacts.updated'] }).expect(201)).body
    const stored = async () => (await t.db('webhook_deliveries').where({ subscription_id: subscription.id }).orderBy('id').select('type', 'payload'))
      .map((row: any) => ({ type: row.type, data: (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload).data }))
    const { client } = socketClient(server.url, sockets, { apiKey: tenant.apiKey })

    await expect(client.service('contacts').create({ first_name: 'Eve', company_id: other.id })).rejects.toMatchObject({ code: 400, errors: { company_id: 'must be a company of this organization' } })
    expect(await t.db('contacts').where({ organization_id: tenant.organization.id })).toHaveLength(0)
    expect(await stored()).toEqual([])

    const created = await client.service('contacts').create({ first_name: 'Ada', last_name: 'Old' })
    const patched = await client.service('contacts').patch(created.id, { last_name: 'New' })
    const events = await stored()
    expect(events.map((event) => event.type)).toEqual(['contacts.created', 'contacts.updated'])
    expect(events[0].data.object).toEqual(created)
    expect(events[1].data.object).toEqual(patched)
    expect(events[1].data.previous_attributes).toEqual({ last_name: 'Old' })
  })

  it('when an API key is presented as a login over REST, then it is a 401 and no token: REST sends the key with every request', async () => {
    const res = await t.http().post('/authentication').send({ strategy: 'api-key', apiKey: acme.apiKey })
    expect(res.status).toBe(401)
    expect(res.body.accessToken).toBeUndefined()
  })

  it('when a socket creates, reads, changes, searches and removes a contact, then it gets the answers REST gives', async () => {
    const { client } = socketClient(server.url, sockets, { apiKey: acme.apiKey })
    const contacts = client.service('contacts')
    const created = await contacts.create({ first_name: 'Socket', last_name: 'Person', email: 'socket.person@example.test' })
    expect(created).toMatchObject({ first_name: 'Socket', organization_id: acme.organization.id })
    const viaRest = await t.http().get(`/contacts/${created.id}`).set(acme.key)
    expect(await contacts.get(created.id)).toEqual(viaRest.body)

    const patched = await contacts.patch(created.id, { last_name: 'Renamed' })
    expect(patched.last_name).toBe('Renamed')
    const found = await contacts.search({ searchTerm: 'socket.person', searchIn: 'email' })
    expect(found.data.map((contact: { id: number }) => contact.id)).toEqual([created.id])

    const listed = await contacts.find({ query: { id: created.id } })
    const listedViaRest = await t.http().get('/contacts').query({ id: created.id }).set(acme.key)
    expect(listed).toEqual(listedViaRest.body)

    expect((await contacts.remove(created.id)).id).toBe(created.id)
    await expect(contacts.get(created.id)).rejects.toMatchObject({ code: 404 })
  })

  it('when a socket sends what REST refuses (invalid fields, a NUL character, another organization\'s records), then it gets the same error objects', async () => {
    const { socket } = socketClient(server.url, sockets, { apiKey: acme.apiKey })
    await connected(socket)
    const foreign = await t.http().post('/contacts').set(globex.key).send({ first_name: 'Foreign' })
    const foreignCompany = await t.http().post('/companies').set(globex.key).send({ name: 'Foreign Ltd' })
    expect(foreignCompany.status).toBe(201)

    const cases: [string, () => Promise<{ status: number; body: any }>, () => Promise<{ error?: any }>, number][] = [
      ['invalid fields', () => t.http().post('/contacts').set(acme.key).send({ first_name: 'X', email: 'not an address' }), () => call(socket, 'create', 'contacts', { first_name: 'X', email: 'not an address' }, {}), 400],
      ['a NUL in the body', () => t.http().post('/contacts').set(acme.key).send({ first_name: 'A\u0000B' }), () => call(socket, 'create', 'contacts', { first_name: 'A\u0000B' }, {}), 400],
      ['a NUL in the query', () => t.http().get('/contacts').set(acme.key).send({ query: { first_name: 'A\u0000' } }), () => call(socket, 'find', 'contacts', { first_name: 'A\u0000' }), 400],
      ['another organization\'s record by id', () => t.http().get(`/contacts/${foreign.body.id}`).set(acme.key), () => call(socket, 'get', 'contacts', foreign.body.id, {}), 404],
      ['another organization by organization_id', () => t.http().get('/contacts').query({ organization_id: globex.organization.id }).set(acme.key), () => call(socket, 'find', 'contacts', { organization_id: globex.organization.id }), 403],
      ['another organization\'s record by reference', () => t.http().post('/contacts').set(acme.key).send({ first_name: 'Ref', company_id: foreignCompany.body.id }), () => call(socket, 'create', 'contacts', { first_name: 'Ref', company_id: foreignCompany.body.id }, {}), 400]
    ]
    for (const [what, viaRest, viaSocket, code] of cases) {
      const restAnswer = await viaRest()
      const socketAnswer = await viaSocket()
      expect(restAnswer.status, what).toBe(code)
      expect(socketAnswer.error, what).toEqual(restAnswer.body)
    }
    const nul = await call(socket, 'create', 'contacts', { first_name: 'A\u0000B' }, {})
    expect(nul.error.errors).toEqual({ first_name: 'must not contain a NUL character' })
  })

  it('when an API key may only read, then its socket reads and its socket writes are a 403', async () => {
    const readOnly = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'reader', scopes: ['read'] })
    expect(readOnly.status, JSON.stringify(readOnly.body)).toBe(201)
    const { client } = socketClient(server.url, sockets, { apiKey: readOnly.body.key })
    await expect(client.service('contacts').find()).resolves.toMatchObject({ data: expect.any(Array) })
    await expect(client.service('contacts').create({ first_name: 'Nope' })).rejects.toMatchObject({ code: 403, name: 'Forbidden' })
  })

  it('when a socket calls a custom method that REST addresses by path, then it names the record in its data and gets what REST gives', async () => {
    const subscription = await t.http().post('/webhook-subscriptions').set(acme.bearer)
      .send({ organization_id: acme.organization.id, url: 'https://hooks.example.test/crm', events: ['*'] })
    expect(subscription.status, JSON.stringify(subscription.body)).toBe(201)
    const { socket } = socketClient(server.url, sockets, { accessToken: acme.token })
    await connected(socket)
    const rotated = await call(socket, 'rotate-secret', 'webhook-subscriptions', { organization_id: acme.organization.id, id: subscription.body.id })
    expect(rotated.error).toBeUndefined()
    expect(rotated.result).toMatchObject({ id: subscription.body.id, secret: expect.stringMatching(/^whsec_/) })
    expect(rotated.result.secret).not.toBe(subscription.body.secret)
    // Without an id there is no record to act on; another organization's is not found.
    const missing = await call(socket, 'rotate-secret', 'webhook-subscriptions', { organization_id: acme.organization.id })
    expect(missing.error).toMatchObject({ code: 400, errors: { id: expect.any(String) } })
    const { socket: other } = socketClient(server.url, sockets, { accessToken: globex.token })
    await connected(other)
    const foreign = await call(other, 'rotate-secret', 'webhook-subscriptions', { organization_id: globex.organization.id, id: subscription.body.id })
    expect(foreign.error).toMatchObject({ code: 404 })
  })

  it('when a socket calls a public HTTP route or has no credentials, then it is refused', async () => {
    const { socket, client } = socketClient(server.url, sockets)
    await connected(socket)
    expect((await call(socket, 'get', 'public/booking-links', 'some-slug', {})).error).toMatchObject({ code: 405, name: 'MethodNotAllowed' })
    await expect(client.service('contacts').find()).rejects.toMatchObject({ code: 401, name: 'NotAuthenticated' })
  })

  describe('when a socket\'s credentials stop being valid, then its next call is refused within 5 s', () => {
    /**
     * Calls until the call is refused with the code, or the server has ended the socket (its
     * credential sweep may come first; a reconnection is then refused in its handshake), failing
     * after the bound. The milliseconds it took. A call made as the socket ends is never answered
     * (socket.io keeps it for a reconnection these clients do not make, and sets no ack timeout),
     * so each call races the socket's end.
     */
    async function refusedWithin(socket: Socket, attempt: () => Promise<unknown>, code: number) {
      const started = Date.now()
      const ended = new Promise<'ended'>((resolve) => {
        socket.once('disconnect', () => resolve('ended'))
        if (!socket.connected) resolve('ended')
      })
      for (;;) {
        const outcome = await Promise.race([attempt().then(() => ({ error: undefined as any }), (error: any) => ({ error })), ended])
        if (outcome === 'ended' || !socket.connected) return Date.now() - started
        if (outcome.error?.code === code) return Date.now() - started
        if (outcome.error) throw outcome.error
        if (Date.now() - started > REVOCATION_BOUND_MS) throw new Error(`still answered after ${REVOCATION_BOUND_MS} ms`)
        await sleep(200)
      }
    }

    it('an API key deleted', async () => {
      const key = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'doomed' })
      const { client, socket } = socketClient(server.url, sockets)
      await client.authenticate({ strategy: 'api-key', apiKey: key.body.key })
      await client.service('contacts').find()
      expect((await t.http().delete(`/api-keys/${key.body.id}`).set(acme.bearer)).status).toBe(200)
      expect(await refusedWithin(socket, () => client.service('contacts').find(), 401)).toBeLessThanOrEqual(REVOCATION_BOUND_MS)
    })

    it('an API key expired (no event announces it)', async () => {
      const key = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'expiring' })
      const { client, socket } = socketClient(server.url, sockets, { apiKey: key.body.key })
      await client.service('contacts').find()
      await t.db('api_keys').where({ id: key.body.id }).update({ expires_at: new Date(Date.now() - 1_000) })
      expect(await refusedWithin(socket, () => client.service('contacts').find(), 401)).toBeLessThanOrEqual(REVOCATION_BOUND_MS)
    })

    it('the password changed (its JWTs revoked)', async () => {
      const owner = await createTenant(t, 'Owner')
      const { client, socket } = socketClient(server.url, sockets)
      await client.authenticate({ strategy: 'local', email: owner.user.email, password: owner.password })
      const own = { query: { organization_id: owner.organization.id } }
      await client.service('contacts').find(own)
      const res = await t.http().patch(`/users/${owner.user.id}`).set(owner.bearer).send({ password: 'a brand new secret', current_password: owner.password })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(await refusedWithin(socket, () => client.service('contacts').find(own), 401)).toBeLessThanOrEqual(REVOCATION_BOUND_MS)
    })

    it('a member removed from the organization, and a role lowered: the new role applies', async () => {
      const admin = await addMember(t, acme, 'admin')
      const { client, socket } = socketClient(server.url, sockets, { accessToken: admin.token })
      const byOrganization = { query: { organization_id: acme.organization.id } }
      await expect(client.service('api-keys').find(byOrganization)).resolves.toMatchObject({ data: expect.any(Array) })
      await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: admin.user.id }).update({ role: 'member' })
      expect(await refusedWithin(socket, () => client.service('api-keys').find(byOrganization), 403)).toBeLessThanOrEqual(REVOCATION_BOUND_MS)
      await expect(client.service('contacts').find(byOrganization)).resolves.toMatchObject({ data: expect.any(Array) })
      await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: admin.user.id }).delete()
      expect(await refusedWithin(socket, () => client.service('contacts').find(byOrganization), 403)).toBeLessThanOrEqual(REVOCATION_BOUND_MS)
    })
  })

  it('when @feathersjs/rest-client with fetch signs in and lists contacts, then it gets what the socket gets', async () => {
    const client: any = feathers()
    client.configure(rest(server.url).fetch(fetch))
    client.configure(authentication())
    await client.authenticate({ strategy: 'local', email: acme.user.email, password: acme.password })
    const query = { organization_id: acme.organization.id, $limit: 5, $sort: { id: 1 } }
    const page = await client.service('contacts').find({ query })
    const viaSocket = socketClient(server.url, sockets, { apiKey: acme.apiKey })
    expect(await viaSocket.client.service('contacts').find({ query })).toEqual(page)
    expect(page.data.length).toBeGreaterThan(0)
    await expect(client.service('contacts').create({ organization_id: acme.organization.id, first_name: 'A\u0000' })).rejects.toMatchObject({ code: 400, errors: { first_name: 'must not contain a NUL character' } })
  })
})

describe('the per-organization rate limit, over REST and Socket.io together', () => {
  let t: TestApp
  let server: Awaited<ReturnType<typeof serveSockets>>
  const sockets: Socket[] = []

  beforeAll(async () => {
    t = await startApp({ rateLimitPoints: 6, rateLimitWindowS: 3600, loginRateLimitPoints: 2, loginRateLimitIpPoints: 100 })
    server = await serveSockets(t)
  })
  afterAll(async () => {
    for (const socket of sockets) socket.disconnect()
    await server.close()
    await t.close()
  })

  it('when an organization\'s key calls over both transports, then each socket call takes one point of the same budget and the socket gets the REST 429', async () => {
    const acme = await createTenant(t, 'Acme')
    const { socket } = socketClient(server.url, sockets, { apiKey: acme.apiKey })
    await connected(socket)
    const first = await t.http().get('/contacts').set(acme.key)
    expect(first.headers['ratelimit-remaining']).toBe('5')
    for (let i = 0; i < 3; i++) expect((await call(socket, 'find', 'contacts', {})).error).toBeUndefined()
    const fifth = await t.http().get('/contacts').set(acme.key)
    expect(fifth.headers['ratelimit-remaining']).toBe('1')
    expect((await call(socket, 'find', 'contacts', {})).error).toBeUndefined()

    const refusedSocket = await call(socket, 'find', 'contacts', {})
    const refusedRest = await t.http().get('/contacts').set(acme.key)
    expect(refusedRest.status).toBe(429)
    expect(refusedRest.headers['retry-after']).toEqual(expect.stringMatching(/^\d+$/))
    expect(refusedRest.headers['ratelimit-remaining']).toBe('0')
    expect(refusedSocket.error).toMatchObject({ name: 'TooManyRequests', code: 429, className: 'too-many-requests', message: 'Rate limit exceeded' })
    expect(refusedSocket.error.data).toMatchObject({ limit: 6, retryAfter: expect.any(Number) })
    expect(Object.keys(refusedSocket.error).sort()).toEqual(Object.keys(refusedRest.body).sort())
  })

  it('when logins fail over a socket and over REST, then they spend the same e-mail budget', async () => {
    const acme = await createTenant(t, 'Throttled')
    const { client } = socketClient(server.url, sockets)
    const wrong = { strategy: 'local', email: acme.user.email, password: 'not the password' }
    await expect(client.authenticate(wrong)).rejects.toMatchObject({ code: 401 })
    expect((await t.http().post('/authentication').send(wrong)).status).toBe(401)
    await expect(client.authenticate({ ...wrong, password: acme.password })).rejects.toMatchObject({ code: 429, name: 'TooManyRequests' })
    expect((await t.http().post('/authentication').send({ ...wrong, password: acme.password })).status).toBe(429)
  })
})
