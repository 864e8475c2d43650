import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/** The search contract of docs/contacts.md: prefix matches first, other matches after, a capped total. */
describe('search order and capped totals', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  const CAP = 1000
  const search = (tenant: Tenant, path: string, body: Record<string, unknown>) =>
    t.http().post(path).set(tenant.key).set('X-Service-Method', 'search').send(body)
  const names = (res: { body: { data: { first_name: string; last_name: string | null }[] } }) =>
    res.body.data.map((contact) => [contact.first_name, contact.last_name].filter(Boolean).join(' '))
  const createMany = async (tenant: Tenant, records: Record<string, unknown>[]) => {
    for (let start = 0; start < records.length; start += 100) {
      const res = await t.http().post('/contacts').set(tenant.key).send(records.slice(start, start + 100))
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201)
    }
  }

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
    await createMany(acme, [
      { first_name: 'Nada', last_name: 'Lin' },
      { first_name: 'Zed', last_name: 'Adams' },
      { first_name: 'Ádán', last_name: 'Ñu' },
      { first_name: 'Ada', last_name: 'Zimmer' },
      { first_name: 'Lin', last_name: 'Cada' },
      { first_name: 'Bob', last_name: 'Adair' },
      { first_name: 'Adam', last_name: 'Brown' },
      { first_name: 'Ada' },
      { first_name: 'Grace', last_name: 'Hopper', email: 'grace@navy.example' },
      { first_name: 'Mary', last_name: 'Keller', email: 'keller.grace@uni.example' },
      { first_name: 'Gracie', last_name: 'Allen', email: 'gracie@radio.example' }
    ])
    await createMany(other, [{ first_name: 'Ada', last_name: 'Other' }, { first_name: 'Adam', last_name: 'Other' }])
  })
  afterAll(async () => { await t.close() })

  // Full names starting with the term (by full name), then last names starting with it (by last
  // name, then full name), then every other match (newest first: Lin Cada was created after
  // Nada Lin); accents and case folded.
  const ADA_ORDER = ['Ada', 'Ada Zimmer', 'Adam Brown', 'Ádán Ñu', 'Bob Adair', 'Zed Adams', 'Lin Cada', 'Nada Lin']

  it('when a name is searched, then names starting with it come first, then last names starting with it, then the other matches, with the exact total', async () => {
    const res = await search(acme, '/contacts', { searchIn: 'name', searchTerm: 'ADA' })
    expect(res.status).toBe(200)
    expect(names(res)).toEqual(ADA_ORDER)
    expect(res.body).toMatchObject({ total: 8, total_capped: false, limit: 10, skip: 0 })
  })

  it('when a search pages, then the pages follow the same order and past the last match the page is empty', async () => {
    const pages = []
    for (const skip of [0, 3, 6]) pages.push(...names(await search(acme, '/contacts', { searchIn: 'name', searchTerm: 'ada', $limit: 3, $skip: skip })))
    expect(pages).toEqual(ADA_ORDER)
    const past = await search(acme, '/contacts', { searchIn: 'name', searchTerm: 'ada', $skip: 20 })
    expect(past.body).toEqual({ total: 8, total_capped: false, limit: 10, skip: 20, data: [] })
  })

  it('when e-mails are searched, then addresses starting with the term come first', async () => {
    const res = await search(acme, '/contacts', { searchIn: 'email', searchTerm: 'Grac' })
    expect(res.body.data.map((contact: { email: string }) => contact.email)).toEqual(['grace@navy.example', 'gracie@radio.example', 'keller.grace@uni.example'])
  })

  it('when companies are searched, then names starting with the term come first, accents folded, website matches after', async () => {
    for (const body of [{ name: 'Über Analytics' }, { name: 'Data Uber', website: 'https://data.example' }, { name: 'Plain', website: 'https://uber.example' }, { name: 'Uberwald' }]) {
      expect((await t.http().post('/companies').set(acme.key).send(body)).status).toBe(201)
    }
    const res = await search(acme, '/companies', { searchTerm: 'uber' })
    expect(res.body.data.map((company: { name: string }) => company.name)).toEqual(['Über Analytics', 'Uberwald', 'Plain', 'Data Uber'])
    expect(res.body).toMatchObject({ total: 4, total_capped: false })
  })

  it("when another organization holds matching contacts, then they are neither listed nor counted, and naming its organization_id is 403", async () => {
    const mine = await search(acme, '/contacts', { searchIn: 'name', searchTerm: 'other' })
    expect(mine.body).toMatchObject({ total: 0, data: [] })
    const theirs = await search(acme, '/contacts', { searchIn: 'name', searchTerm: 'ada', organization_id: other.organization.id })
    expect(theirs.status).toBe(403)
  })

  describe(`above ${CAP} matches`, () => {
    beforeAll(async () => {
      // 1,000 more matches, all "other matches" of 'ada' (the term inside the name), newer than
      // Lin Cada and Nada Lin: 1,008 in all.
      await createMany(acme, Array.from({ length: CAP }, (_, index) => ({ first_name: 'Xada', last_name: `Filler ${String(index).padStart(4, '0')}` })))
    })

    it('when more contacts match than the cap, then the total is the cap, total_capped is true, and the order is the same', async () => {
      const res = await search(acme, '/contacts', { searchIn: 'name', searchTerm: 'ada', $limit: 12 })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ total: CAP, total_capped: true, limit: 12, skip: 0 })
      // The prefix groups, then the other matches newest first: the fillers before Lin Cada and Nada Lin.
      expect(names(res)).toEqual([...ADA_ORDER.slice(0, 6), ...[999, 998, 997, 996, 995, 994].map((n) => `Xada Filler 0${n}`)])
    })

    it('when pages reach the cap, then the last one is served and one beyond it is a 400 naming $skip', async () => {
      const last = await search(acme, '/contacts', { searchIn: 'name', searchTerm: 'ada', $limit: 10, $skip: CAP - 10 })
      expect(last.status).toBe(200)
      // Positions 991-1,000: after the six prefix matches, the fillers from 0999 down reach 0015 at 991.
      expect(names(last)).toEqual(Array.from({ length: 10 }, (_, index) => `Xada Filler ${String(15 - index).padStart(4, '0')}`))
      const beyond = await search(acme, '/contacts', { searchIn: 'name', searchTerm: 'ada', $limit: 10, $skip: CAP - 9 })
      expect(beyond.status).toBe(400)
      expect(beyond.body.errors.$skip).toMatch(/first 1000 matches/)
    })

    it('when a term matches few of them, then the total is exact again', async () => {
      const res = await search(acme, '/contacts', { searchIn: 'name', searchTerm: 'filler 000' })
      expect(res.body).toMatchObject({ total: 10, total_capped: false })
      expect(names(res)).toEqual(Array.from({ length: 10 }, (_, index) => `Xada Filler 000${index}`))
    })
  })
})
