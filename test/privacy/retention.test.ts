import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { enqueueDuePurges } from '../../src/services/crm/privacy/retention.js'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createContact, createConversation, created } from '../conversations/fixtures.js'
import { createDeal, createPipeline } from '../services/deal-fixtures.js'
import { attachFile, settlePurges } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

/** Moves a record's deletion back in time: the purge compares deleted_at with the retention. */
const deletedDaysAgo = (t: TestApp, table: string, ids: number[], days: number) =>
  t.db(table).whereIn('id', ids).update({ deleted_at: t.db.raw(`now() - make_interval(days => ${days})`) })

describe('retention of deleted records', () => {
  let t: TestApp
  let acme: Tenant

  useApp({ tenants: ['Acme'] }, (app) => ({ t, tenants: [acme] } = app))

  /** What the background scheduling does: a job per organization with something due, run by the outbox. */
  const purgeNow = async (tenant = acme) => {
    await enqueueDuePurges(t.db)
    await settlePurges(t, tenant.organization.id)
  }
  const remove = async (path: string, id: number) => expect((await t.http().delete(`/${path}/${id}`).set(acme.key)).status).toBe(200)
  const exists = async (table: string, id: number) => Boolean(await t.db(table).first('id').where({ organization_id: acme.organization.id, id }))

  it('when deleted records are older than the retention, then they are removed for good with their stored files, records that stay no longer name them, and younger or still needed ones stay', async () => {
    const gone = await createContact(t, acme, { first_name: 'Gone' })
    const board = await createPipeline(t, acme)
    const deal = await createDeal(t, acme, board, { contact_id: gone.id })
    const conversation = await createConversation(t, acme, { channel: 'whatsapp' })
    const file = await attachFile(t, acme, conversation.id, 21)
    const young = await createContact(t, acme, { first_name: 'Young' })
    const needed = await createContact(t, acme, { first_name: 'Needed' })
    const liveThread = await createConversation(t, acme, { contact_id: needed.id })
    await remove('contacts', gone.id)
    await remove('conversations', conversation.id)
    await remove('contacts', young.id)
    await remove('contacts', needed.id)
    await deletedDaysAgo(t, 'contacts', [gone.id, needed.id], 31)
    await deletedDaysAgo(t, 'conversations', [conversation.id], 31)
    await deletedDaysAgo(t, 'conversation_files', [file.id], 31)
    await t.db('conversation_messages').where({ conversation_id: conversation.id }).update({ deleted_at: t.db.raw("now() - interval '31 days'") })
    await deletedDaysAgo(t, 'contacts', [young.id], 29)
    const listed = await t.http().get('/contacts').set(acme.key).query({ $withDeleted: true, id: { $in: [gone.id, young.id] } })
    expect(listed.body.data.map((contact: any) => contact.id).sort()).toEqual([gone.id, young.id].sort())

    await purgeNow()
    expect(await exists('contacts', gone.id)).toBe(false)
    expect(await exists('conversations', conversation.id)).toBe(false)
    expect(await exists('conversation_files', file.id)).toBe(false)
    expect((await t.http().get(new URL(file.url).pathname)).status).toBe(404)
    const kept = (await t.http().get(`/deals/${deal.id}`).set(acme.key)).body
    expect(kept).toMatchObject({ id: deal.id, contact_id: null, contact: null })
    expect(await exists('contacts', young.id)).toBe(true)
    // A live conversation still names it: it waits for the conversation to go first.
    expect(await exists('contacts', needed.id)).toBe(true)
    expect(await exists('conversations', liveThread.id)).toBe(true)
    const relisted = await t.http().get('/contacts').set(acme.key).query({ $withDeleted: true, id: { $in: [gone.id, young.id] } })
    expect(relisted.body.data.map((contact: any) => contact.id)).toEqual([young.id])
  })

  it('when an organization keeps deleted records forever (retention 0), then nothing of it is purged; only an owner changes the retention, to 0 to 3650 days', async () => {
    const keeper = await createTenant(t, 'Keeper')
    const admin = await addMember(t, keeper, 'admin')
    const organization = `/organizations/${keeper.organization.id}`
    expect((await t.http().get(organization).set(keeper.bearer)).body.deleted_retention_days).toBe(30)
    expect((await t.http().patch(organization).set(admin.bearer).send({ deleted_retention_days: 0 })).status).toBe(403)
    for (const days of [-1, 3651, 'ten']) {
      const refused = await t.http().patch(organization).set(keeper.bearer).send({ deleted_retention_days: days })
      expect(refused.status).toBe(400)
      expect(refused.body.errors).toHaveProperty('deleted_retention_days')
    }
    const changed = await t.http().patch(organization).set(keeper.bearer).send({ deleted_retention_days: 0 })
    expect(changed.status).toBe(200)
    expect(changed.body.deleted_retention_days).toBe(0)
    const old = created(await t.http().post('/contacts').set(keeper.key).send({ first_name: 'Old' }), 'contact')
    expect((await t.http().delete(`/contacts/${old.id}`).set(keeper.key)).status).toBe(200)
    await t.db('contacts').where({ id: old.id }).update({ deleted_at: t.db.raw("now() - interval '3000 days'") })
    await purgeNow(keeper)
    expect(await t.db('contacts').first('id').where({ organization_id: keeper.organization.id, id: old.id })).toBeTruthy()
    expect(await t.db('outbox_jobs').where({ organization_id: keeper.organization.id, topic: 'purge' })).toEqual([])
  })

  it('when the service runs with PURGE_INTERVAL_S, then due records are purged without anyone asking', async () => {
    const running = await startApp({ purgeIntervalS: 0.2 } as any)
    try {
      const tenant = await createTenant(running, 'Background')
      const contact = created(await running.http().post('/contacts').set(tenant.key).send({ first_name: 'Due' }), 'contact')
      expect((await running.http().delete(`/contacts/${contact.id}`).set(tenant.key)).status).toBe(200)
      await running.db('contacts').where({ id: contact.id }).update({ deleted_at: running.db.raw("now() - interval '40 days'") })
      const present = async () => Boolean(await running.db('contacts').first('id').where({ organization_id: tenant.organization.id, id: contact.id }))
      for (let attempt = 0; attempt < 100 && (await present()); attempt++) await sleep(100)
      expect(await present()).toBe(false)
    } finally {
      await running.close()
    }
  })
})
