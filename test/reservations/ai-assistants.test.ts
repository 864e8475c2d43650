import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { at, contact, created, inDays, link, resourceWithHours } from './fixtures.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const ALL_TOOLS = ['find_reservations', 'create_reservation', 'update_reservation', 'get_reservation_services', 'get_available_slots']

describe('AI assistants and their reservation tools', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let service: any
  let assistant: any
  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Salon')
    globex = await createTenant(t, 'Rival')
    service = await created(t, acme, '/reservation-services', { name: 'Haircut', duration_minutes: 60, max_advance_days: 400 })
    const stylist = await resourceWithHours(t, acme, { name: 'Ana' }, [['09:00', '12:00']])
    await link(t, acme, service.id, stylist.id)
    assistant = await created(t, acme, '/ai-assistants', {
      name: 'Receptionist', instructions: 'Be nice',
      internal_tools: { tools: Object.fromEntries(ALL_TOOLS.map((key) => [key, { enabled: true }])) }
    })
  })
  afterAll(async () => {
    await t.close()
  })

  const call = (tenant: Tenant, body: Record<string, unknown>) => t.http().post('/ai-assistant-tool-calls').set(tenant.key).send(body)

  describe('/ai-assistants', () => {
    it('when an assistant is created and patched, then tools are kept by key and unknown keys → 400', async () => {
      const res = await t.http().post('/ai-assistants').set(acme.key).send({ name: 'Helper' })
      expect(res.status).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, name: 'Helper', instructions: null, internal_tools: { tools: {} },
        created_by_user_id: acme.user.id, created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
      })
      const patched = await t.http().patch(`/ai-assistants/${res.body.id}`).set(acme.key).send({ internal_tools: { tools: { find_reservations: { enabled: true }, create_reservation: { enabled: false } } } })
      expect(patched.status).toBe(200)
      expect((await t.http().get(`/ai-assistants/${res.body.id}`).set(acme.key)).body.internal_tools).toEqual({ tools: { find_reservations: { enabled: true }, create_reservation: { enabled: false } } })
      const unknown = await t.http().patch(`/ai-assistants/${res.body.id}`).set(acme.key).send({ internal_tools: { tools: { delete_everything: { enabled: true } } } })
      expect(unknown.status).toBe(400)
      expect(unknown.body.errors).toEqual({ 'internal_tools.tools.delete_everything': expect.stringMatching(/^is not a tool/) })
      const malformed = await t.http().patch(`/ai-assistants/${res.body.id}`).set(acme.key).send({ internal_tools: { tools: { find_reservations: { enabled: 'yes' } } } })
      expect(malformed.status).toBe(400)
      const list = await t.http().get('/ai-assistants').set(acme.key)
      expect(list.body).toMatchObject({ total: 2, limit: 10, skip: 0 })
      expect((await t.http().delete(`/ai-assistants/${res.body.id}`).set(acme.key)).status).toBe(200)
      expect((await t.http().get(`/ai-assistants/${res.body.id}`).set(acme.key)).status).toBe(404)
    })

    it('when another organization uses an assistant by id, by organization_id or as a reference, then 404, 403 and 400', async () => {
      expect((await t.http().get(`/ai-assistants/${assistant.id}`).set(globex.key)).status).toBe(404)
      expect((await t.http().patch(`/ai-assistants/${assistant.id}`).set(globex.key).send({ name: 'Mine' })).status).toBe(404)
      expect((await t.http().get('/ai-assistants').set(globex.key).query({ organization_id: acme.organization.id })).status).toBe(403)
      const borrowed = await call(globex, { assistant_id: assistant.id, tool: 'get_reservation_services' })
      expect(borrowed.status).toBe(400)
      expect(borrowed.body.errors).toEqual({ assistant_id: 'must be an ai assistant of this organization' })
      expect((await call(globex, { organization_id: acme.organization.id, assistant_id: assistant.id, tool: 'get_reservation_services' })).status).toBe(403)
    })
  })

  it('when the tools are listed, then each has the JSON Schema of its arguments', async () => {
    const res = await t.http().get('/ai-assistant-tools').set(acme.key)
    expect(res.status).toBe(200)
    expect(res.body.data.map((tool: any) => tool.key)).toEqual(ALL_TOOLS)
    const create = res.body.data.find((tool: any) => tool.key === 'create_reservation')
    expect(create).toMatchObject({ endpoint: 'POST /reservations', arguments: { type: 'object', required: expect.arrayContaining(['service_id', 'contact_id', 'start_datetime']) } })
    expect(res.body.data.find((tool: any) => tool.key === 'update_reservation').arguments.required).toEqual(['id'])
    expect((await t.http().get('/ai-assistant-tools')).status).toBe(401)
  })

  it('when the assistant looks up services and slots, books, reschedules and finds, then each tool answers like its endpoint, with source assistant', async () => {
    const person = await contact(t, acme)
    const date = inDays(9)
    const services = await call(acme, { assistant_id: assistant.id, tool: 'get_reservation_services', arguments: { is_active: true } })
    expect(services.status).toBe(201)
    expect(services.body).toMatchObject({ tool: 'get_reservation_services', result: { total: 1, data: [{ id: service.id, name: 'Haircut' }] } })
    const slots = await call(acme, { assistant_id: assistant.id, tool: 'get_available_slots', arguments: { service_id: service.id, date } })
    expect(slots.body.result.data.map((s: any) => s.start_datetime)).toEqual([at(date, '09:00'), at(date, '10:00'), at(date, '11:00')])

    const booked = await call(acme, { assistant_id: assistant.id, tool: 'create_reservation', arguments: { service_id: service.id, contact_id: person.id, start_datetime: at(date, '10:00') } })
    expect(booked.status, JSON.stringify(booked.body)).toBe(201)
    expect(booked.body.result).toMatchObject({ source: 'assistant', status: 'confirmed', start_datetime: at(date, '10:00'), created_by_user_id: acme.user.id })
    expect(booked.body.result).not.toHaveProperty('custom_fields')
    const read = await t.http().get(`/reservations/${booked.body.result.id}`).set(acme.key)
    expect(read.body.source).toBe('assistant')

    const clash = await call(acme, { assistant_id: assistant.id, tool: 'create_reservation', arguments: { service_id: service.id, contact_id: person.id, start_datetime: at(date, '10:00') } })
    expect(clash.status).toBe(409)
    expect(clash.body.errors).toHaveProperty('start_datetime')
    const invalid = await call(acme, { assistant_id: assistant.id, tool: 'create_reservation', arguments: { service_id: service.id, start_datetime: at(date, '11:00') } })
    expect(invalid.status).toBe(400)
    expect(invalid.body.errors).toEqual({ contact_id: 'is required' })

    const moved = await call(acme, { assistant_id: assistant.id, tool: 'update_reservation', arguments: { id: booked.body.result.id, start_datetime: at(date, '11:00') } })
    expect(moved.status).toBe(201)
    expect(moved.body.result).toMatchObject({ start_datetime: at(date, '11:00'), end_datetime: at(date, '12:00') })
    const found = await call(acme, { assistant_id: assistant.id, tool: 'find_reservations', arguments: { contact_id: person.id } })
    expect(found.body.result).toMatchObject({ total: 1, data: [{ id: booked.body.result.id, start_datetime: at(date, '11:00') }] })
  })

  it('when a tool is unknown or disabled, or reaches into another organization, then 400 or the endpoint\'s error', async () => {
    const limited = await created(t, acme, '/ai-assistants', { name: 'Limited', internal_tools: { tools: { find_reservations: { enabled: true }, create_reservation: { enabled: false } } } })
    const disabled = await call(acme, { assistant_id: limited.id, tool: 'create_reservation', arguments: {} })
    expect(disabled.status).toBe(400)
    expect(disabled.body.errors).toEqual({ tool: 'is not enabled for this assistant' })
    expect((await call(acme, { assistant_id: limited.id, tool: 'get_available_slots', arguments: {} })).body.errors).toEqual({ tool: 'is not enabled for this assistant' })
    const unknown = await call(acme, { assistant_id: limited.id, tool: 'drop_tables' })
    expect(unknown.status).toBe(400)
    expect(unknown.body.errors.tool).toMatch(/^is not a tool/)
    const foreign = await call(acme, { assistant_id: limited.id, tool: 'find_reservations', arguments: { organization_id: globex.organization.id } })
    expect(foreign.status).toBe(403)
    const rival = await createTenant(t, 'Other')
    const theirContact = await contact(t, rival)
    const crossBooking = await call(acme, { assistant_id: assistant.id, tool: 'create_reservation', arguments: { service_id: service.id, contact_id: theirContact.id, start_datetime: at(inDays(9), '09:00') } })
    expect(crossBooking.status).toBe(400)
    expect(crossBooking.body.errors).toHaveProperty('contact_id')
  })

  it('when a plain member with a JWT calls a tool, then the organization comes from the body and member rules apply', async () => {
    const member = await addMember(t, acme, 'member')
    const noOrg = await t.http().post('/ai-assistant-tool-calls').set(member.bearer).send({ assistant_id: assistant.id, tool: 'get_reservation_services' })
    expect(noOrg.status).toBe(400)
    expect(noOrg.body.errors).toEqual({ organization_id: 'is required' })
    const ok = await t.http().post('/ai-assistant-tool-calls').set(member.bearer).send({ organization_id: acme.organization.id, assistant_id: assistant.id, tool: 'get_reservation_services' })
    expect(ok.status).toBe(201)
    expect(ok.body.result.total).toBe(1)
  })
})
