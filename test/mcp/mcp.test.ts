import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { contact, created, inDays, link, resourceWithHours } from '../reservations/fixtures.js'
import { createDeal, createPipeline } from '../services/deal-fixtures.js'
import { upload } from '../imports/fixtures.js'

const RESERVATION_TOOLS = ['find_reservations', 'create_reservation', 'update_reservation', 'get_reservation_services', 'get_available_slots']
const CRM_TOOLS = ['search_contacts', 'get_contact', 'create_contact', 'find_deals', 'create_activity', 'export_contact_personal_data', 'export_list_csv', 'get_import', 'send_conversation_message']

/** The app listening on an ephemeral loopback port, as an MCP client reaches it. */
async function listen(t: TestApp) {
  const server = http.createServer(t.app.callback())
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`)
  return { url, close: () => new Promise((resolve) => server.close(resolve)) }
}

const clients: Client[] = []
async function connect(url: URL, headers: Record<string, string>) {
  const client = new Client({ name: 'crm-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }))
  clients.push(client)
  return client
}

/** What a tool answered: the parsed JSON of its text content (the API's body, or its error body). */
const answer = (result: unknown) => JSON.parse(((result as CallToolResult).content[0] as { text: string }).text)

describe('the MCP server at /mcp', () => {
  let t: TestApp
  let endpoint: Awaited<ReturnType<typeof listen>>
  let acme: Tenant
  let globex: Tenant
  let service: any
  let carmen: any
  let client: Client
  beforeAll(async () => {
    t = await startApp()
    endpoint = await listen(t)
    acme = await createTenant(t, 'Salon')
    globex = await createTenant(t, 'Rival')
    service = await created(t, acme, '/reservation-services', { name: 'Haircut', duration_minutes: 60, max_advance_days: 400 })
    const stylist = await resourceWithHours(t, acme, { name: 'Ana' }, [['09:00', '12:00']])
    await link(t, acme, service.id, stylist.id)
    carmen = await contact(t, acme, { first_name: 'Carmen', last_name: 'Vidal' })
    client = await connect(endpoint.url, acme.key)
  })
  afterAll(async () => {
    for (const c of clients) await c.close()
    await endpoint.close()
    await t.close()
  })

  it('when a client lists the tools, then the reservation and CRM tools, each with its JSON Schema from the service schemas', async () => {
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name).sort()).toEqual([...RESERVATION_TOOLS, ...CRM_TOOLS].sort())
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]))
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object')
      expect(tool.description).toMatch(/\((GET|POST|PATCH) \//)
    }
    expect(byName.create_reservation.inputSchema.required).toEqual(expect.arrayContaining(['service_id', 'start_datetime']))
    expect(byName.create_reservation.inputSchema.additionalProperties).toBe(false)
    expect(byName.get_contact.inputSchema.required).toEqual(['id'])
    expect(byName.create_contact.inputSchema.properties).toHaveProperty('email')
    expect(byName.send_conversation_message.inputSchema.required).toContain('conversation_id')
  })

  it('when search_contacts is called without searchIn, then it searches names (the default its schema declares); email still works when named', async () => {
    const { tools } = await client.listTools()
    const search = tools.find((tool) => tool.name === 'search_contacts')!
    expect(search.inputSchema.required).toEqual(['searchTerm'])
    expect(search.inputSchema.properties!.searchIn).toMatchObject({ enum: ['name', 'email', 'phone'], default: 'name' })
    const made = answer(await client.callTool({ name: 'create_contact', arguments: { first_name: 'Katherine', last_name: 'Johnson', email: 'kj@nasa.example.test' } }))
    const byName = answer(await client.callTool({ name: 'search_contacts', arguments: { searchTerm: 'Katherine' } }))
    expect(byName.data.map((c: any) => c.id)).toEqual([made.id])
    // The default is a name search: the e-mail's text is not looked at.
    expect(answer(await client.callTool({ name: 'search_contacts', arguments: { searchTerm: 'nasa.example' } })).data).toEqual([])
    expect(answer(await client.callTool({ name: 'search_contacts', arguments: { searchTerm: 'nasa.example', searchIn: 'email' } })).data.map((c: any) => c.id)).toEqual([made.id])
  })

  it('when a client finds a free slot and books it, then the reservation is stored with source assistant', async () => {
    const date = inDays(7)
    const slots = await client.callTool({ name: 'get_available_slots', arguments: { service_id: service.id, date } })
    expect(slots.isError, JSON.stringify(slots)).toBeFalsy()
    const free = answer(slots).data
    expect(free.length).toBeGreaterThan(0)
    expect(slots.structuredContent).toEqual(answer(slots))

    const booked = await client.callTool({
      name: 'create_reservation',
      arguments: { service_id: service.id, contact_id: carmen.id, start_datetime: free[0].start_datetime, party_size: 1 }
    })
    expect(booked.isError, JSON.stringify(booked)).toBeFalsy()
    const reservation = answer(booked)
    const stored = await t.http().get(`/reservations/${reservation.id}`).set(acme.key)
    expect(stored.status).toBe(200)
    expect(stored.body).toMatchObject({ organization_id: acme.organization.id, contact_id: carmen.id, service_id: service.id, start_datetime: free[0].start_datetime, source: 'assistant' })

    const after = answer(await client.callTool({ name: 'get_available_slots', arguments: { service_id: service.id, date } })).data
    expect(after.map((slot: any) => slot.start_datetime)).not.toContain(free[0].start_datetime)
  })

  it('when arguments are invalid, then a tool error with the field messages (no protocol error), and nothing is written; an unknown tool is a protocol error', async () => {
    const before = await t.db('contacts').where({ organization_id: acme.organization.id }).count({ n: '*' }).first()
    const result = await client.callTool({ name: 'create_contact', arguments: { first_name: 'Eve', email: 'not-an-e-mail', shoe_size: 44 } })
    expect(result.isError).toBe(true)
    const body = answer(result)
    expect(body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
    expect(Object.keys(body.errors)).toEqual(expect.arrayContaining(['email']))
    const after = await t.db('contacts').where({ organization_id: acme.organization.id }).count({ n: '*' }).first()
    expect(after).toEqual(before)

    const unbookable = await client.callTool({ name: 'create_reservation', arguments: { contact_id: carmen.id } })
    expect(unbookable.isError).toBe(true)
    expect(answer(unbookable).errors).toHaveProperty('service_id')

    await expect(client.callTool({ name: 'drop_everything', arguments: {} })).rejects.toThrow(/-32602.*Unknown tool: drop_everything/)
    expect((await client.listTools()).tools).toHaveLength(14)
  })

  it('when a tool names a record of another organization, then it stays out of reach: 404 by id, 403 by organization_id, 400 by reference', async () => {
    const theirs = await contact(t, globex, { first_name: 'Rival' })
    const byId = await client.callTool({ name: 'get_contact', arguments: { id: theirs.id } })
    expect(byId.isError).toBe(true)
    expect(answer(byId).code).toBe(404)

    const byOrganization = await client.callTool({ name: 'find_reservations', arguments: { organization_id: globex.organization.id } })
    expect(byOrganization.isError).toBe(true)
    expect(answer(byOrganization).code).toBe(403)

    const byReference = await client.callTool({ name: 'create_activity', arguments: { subject: 'Call', contact_id: theirs.id } })
    expect(byReference.isError).toBe(true)
    expect(answer(byReference)).toMatchObject({ code: 400, errors: { contact_id: expect.any(String) } })

    const theirService = await created(t, globex, '/reservation-services', { name: 'Theirs', duration_minutes: 30 })
    const services = answer(await client.callTool({ name: 'get_reservation_services', arguments: {} }))
    expect(services.data.map((s: any) => s.id)).toEqual([service.id])
    expect(services.data.map((s: any) => s.id)).not.toContain(theirService.id)

    const board = await createPipeline(t, globex)
    const theirDeal = await createDeal(t, globex, board)
    const deals = answer(await client.callTool({ name: 'find_deals', arguments: {} }))
    expect(deals.data.map((d: any) => d.id)).not.toContain(theirDeal.id)
  })

  it('when the CRM tools are used, then they act as their endpoints: search, read, create, list and send', async () => {
    const made = answer(await client.callTool({ name: 'create_contact', arguments: { first_name: 'Grace', last_name: 'Hopper', email: 'grace@example.test' } }))
    expect(made).toMatchObject({ id: expect.any(Number), organization_id: acme.organization.id, first_name: 'Grace' })
    const found = answer(await client.callTool({ name: 'search_contacts', arguments: { searchTerm: 'Hopper', searchIn: 'name' } }))
    expect(found.data.map((c: any) => c.id)).toEqual([made.id])
    expect(answer(await client.callTool({ name: 'get_contact', arguments: { id: made.id } })).email).toBe('grace@example.test')

    const board = await createPipeline(t, acme)
    const deal = await createDeal(t, acme, board, { contact_id: made.id })
    const deals = answer(await client.callTool({ name: 'find_deals', arguments: { contact_id: made.id } }))
    expect(deals).toMatchObject({ total: 1, data: [{ id: deal.id, amount: '1500.00' }] })

    const activity = answer(await client.callTool({ name: 'create_activity', arguments: { subject: 'Follow-up call', contact_id: made.id, deal_id: deal.id } }))
    const readBack = await t.http().get(`/activities/${activity.id}`).set(acme.key)
    expect(readBack.body).toMatchObject({ subject: 'Follow-up call', contact_id: made.id, deal_id: deal.id })

    const conversation = await created(t, acme, '/conversations', { channel: 'playground', contact_id: made.id })
    const sent = await client.callTool({ name: 'send_conversation_message', arguments: { conversation_id: conversation.id, content: 'Your table is booked' } })
    expect(sent.isError, JSON.stringify(sent)).toBeFalsy()
    const messages = await t.http().get('/conversation-messages-playground').set(acme.key).query({ conversation_id: conversation.id })
    expect(messages.body.data.map((m: any) => [m.id, m.content, m.direction])).toEqual([[answer(sent).id, 'Your table is booked', 'outbound']])

    const theirs = await created(t, globex, '/conversations', { channel: 'playground', contact_id: (await contact(t, globex)).id })
    const elsewhere = await client.callTool({ name: 'send_conversation_message', arguments: { conversation_id: theirs.id, content: 'Hi' } })
    expect(answer(elsewhere)).toMatchObject({ code: 400, errors: { conversation_id: expect.any(String) } })
    expect(Number((await t.db('conversation_messages').where({ conversation_id: theirs.id }).count({ n: '*' }).first())!.n)).toBe(0)
  })

  it('when the key comes as Authorization: Bearer, then it works too; without a valid key, the connection is refused with 401', async () => {
    const bearer = await connect(endpoint.url, { Authorization: `Bearer ${acme.apiKey}` })
    expect((await bearer.listTools()).tools).toHaveLength(14)

    const refused = await fetch(endpoint.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': 'crm_nope_nope' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
    })
    expect(refused.status).toBe(401)
    expect(await refused.json()).toMatchObject({ name: 'NotAuthenticated', code: 401 })
    await expect(connect(endpoint.url, {})).rejects.toThrow(/401/)
    expect((await fetch(endpoint.url, { headers: acme.key })).status).toBe(405)
  })

  it('when the session names an assistant (X-Assistant-Id), then only the reservation tools it enables are offered and callable', async () => {
    const assistant = await created(t, acme, '/ai-assistants', {
      name: 'Receptionist', internal_tools: { tools: { get_available_slots: { enabled: true }, create_reservation: { enabled: true }, find_reservations: { enabled: false } } }
    })
    const limited = await connect(endpoint.url, { ...acme.key, 'X-Assistant-Id': String(assistant.id) })
    const names = (await limited.listTools()).tools.map((tool) => tool.name)
    expect(names.sort()).toEqual(['create_reservation', 'get_available_slots', ...CRM_TOOLS].sort())
    const refused = await limited.callTool({ name: 'find_reservations', arguments: {} })
    expect(refused.isError).toBe(true)
    expect(answer(refused)).toMatchObject({ code: 400, errors: { tool: 'is not enabled for this assistant' } })
    const allowed = await limited.callTool({ name: 'get_available_slots', arguments: { service_id: service.id, date: inDays(8) } })
    expect(allowed.isError).toBeFalsy()

    const theirAssistant = await created(t, globex, '/ai-assistants', { name: 'Theirs' })
    const response = await fetch(endpoint.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...acme.key, 'x-assistant-id': String(theirAssistant.id) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
    })
    expect(response.status).toBe(400)
    expect((await response.json()).errors).toHaveProperty('x-assistant-id')
  })
})

describe('the MCP server and the rate limit', () => {
  let t: TestApp
  let endpoint: Awaited<ReturnType<typeof listen>>
  beforeAll(async () => {
    t = await startApp({ rateLimitPoints: 3 })
    endpoint = await listen(t)
  })
  afterAll(async () => {
    await endpoint.close()
    await t.close()
  })

  it('when tool calls exceed the organization limit, then a 429 tool error; each tool call counts once, as one HTTP request would', async () => {
    const acme = await createTenant(t)
    const client = await connect(endpoint.url, acme.key)
    const results = []
    for (let i = 0; i < 4; i++) results.push(await client.callTool({ name: 'get_reservation_services', arguments: {} }))
    expect(results.map((result) => Boolean(result.isError))).toEqual([false, false, false, true])
    expect(answer(results[3])).toMatchObject({ code: 429, name: 'TooManyRequests' })
    expect((await t.http().get('/contacts').set(acme.key)).status).toBe(429)
    await client.close()
  })
})

describe('the MCP server and personal data', () => {
  let t: TestApp
  let endpoint: Awaited<ReturnType<typeof listen>>
  beforeAll(async () => {
    t = await startApp()
    endpoint = await listen(t)
  })
  afterAll(async () => {
    await endpoint.close()
    await t.close()
  })

  it('when a contact is exported, then the tool answers the export document; the erasure tool is offered only where MCP_ALLOW_ERASE is set, and then erases with its confirmation', async () => {
    const acme = await createTenant(t)
    const client = await connect(endpoint.url, acme.key)
    const ada = await contact(t, acme, { first_name: 'Ada' })
    const exported = answer(await client.callTool({ name: 'export_contact_personal_data', arguments: { id: ada.id } }))
    expect(exported).toMatchObject({ format: 'crm-personal-data', version: 1, contact: { id: ada.id, first_name: 'Ada' } })
    expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain('erase_contact_personal_data')
    const refused = await client.callTool({ name: 'erase_contact_personal_data', arguments: { id: ada.id, confirm: ada.id } })
    expect(answer(refused)).toMatchObject({ code: 400, errors: { tool: expect.any(String) } })
    expect((await t.http().get(`/contacts/${ada.id}`).set(acme.key)).status).toBe(200)

    t.app.set('mcpAllowErase', true)
    try {
      const allowed = await connect(endpoint.url, acme.key)
      expect((await allowed.listTools()).tools.map((tool) => tool.name)).toContain('erase_contact_personal_data')
      const unconfirmed = await allowed.callTool({ name: 'erase_contact_personal_data', arguments: { id: ada.id, confirm: ada.id + 1 } })
      expect(answer(unconfirmed)).toMatchObject({ code: 400, errors: { confirm: expect.any(String) } })
      const erased = answer(await allowed.callTool({ name: 'erase_contact_personal_data', arguments: { id: ada.id, confirm: ada.id } }))
      expect(erased).toMatchObject({ contact_id: ada.id, removed: { contacts: 1 } })
      expect((await t.http().get(`/contacts/${ada.id}`).set(acme.key)).status).toBe(404)
    } finally {
      t.app.set('mcpAllowErase', false)
    }
  })
})

describe('the MCP server and CSV', () => {
  let t: TestApp
  let endpoint: Awaited<ReturnType<typeof listen>>
  beforeAll(async () => {
    t = await startApp()
    endpoint = await listen(t)
  })
  afterAll(async () => {
    await endpoint.close()
    await t.close()
  })

  it('when an assistant exports a filtered list, then the tool answers its CSV text; get_import answers an import of its organization only', async () => {
    const acme = await createTenant(t)
    const rival = await createTenant(t, 'Rival')
    const client = await connect(endpoint.url, acme.key)
    await t.http().post('/contacts').set(acme.key).send([{ first_name: 'Ada', email: 'ada@mcp.test' }, { first_name: 'Bob', email: 'bob@other.test' }])
    const text = answer(await client.callTool({ name: 'export_list_csv', arguments: { resource: 'contacts', query: { email: { $ilike: '%@mcp.test' }, $select: ['first_name', 'email'] } } }))
    expect(text).toBe(`id,first_name,email\n${(await t.db('contacts').where({ organization_id: acme.organization.id, email: 'ada@mcp.test' }).first()).id},Ada,ada@mcp.test\n`)
    const bad = answer(await client.callTool({ name: 'export_list_csv', arguments: { resource: 'contacts', query: { nope: 1 } } }))
    expect(bad).toMatchObject({ code: 400 })

    const ours = (await upload(t, acme, Buffer.from('First Name\nAda\n'), { resource: 'contacts' })).body
    const theirs = (await upload(t, rival, Buffer.from('First Name\nEve\n'), { resource: 'contacts' })).body
    expect(answer(await client.callTool({ name: 'get_import', arguments: { id: ours.id } }))).toMatchObject({ id: ours.id, status: 'previewed', preview: { to_create: 1 } })
    expect(answer(await client.callTool({ name: 'get_import', arguments: { id: theirs.id } }))).toMatchObject({ code: 404 })
  })
})
