import type { Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { browserMissing, servedInBrowser } from '../helpers/browser.js'
import type { ServedApp } from '../helpers/browser.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

const missing = browserMissing()

/**
 * An operation's block on the page. Swagger UI renders only the operations near the viewport, and
 * on a loaded machine it renders behind the scrolling (and may render a block again, detaching the
 * one found): the page is scrolled down a screen at a time, back to the top when it reaches the
 * bottom, until the block exists and can be scrolled into view.
 */
async function operation(page: Page, tag: string, operationId: string): Promise<Locator> {
  const block = page.locator(`#operations-${tag}-${operationId}`)
  const deadline = Date.now() + 60_000
  await page.evaluate(() => window.scrollTo(0, 0))
  for (;;) {
    while ((await block.count()) === 0) {
      if (Date.now() > deadline) throw new Error(`Swagger UI did not render the block of ${operationId} within 60 s`)
      const moved = await page.evaluate(() => {
        const before = window.scrollY
        window.scrollBy(0, window.innerHeight)
        return window.scrollY !== before
      })
      if (!moved) await page.evaluate(() => window.scrollTo(0, 0))
      await page.waitForTimeout(20)
    }
    try {
      await block.scrollIntoViewIfNeeded({ timeout: 5_000 })
      return block
    } catch (error) {
      if (Date.now() > deadline) throw error
    }
  }
}

/** Opens an operation, presses "Try it out", lets `fill` type into the form, executes it: the status and body the page shows. */
async function execute(page: Page, tag: string, operationId: string, fill?: (block: Locator) => Promise<void>) {
  const block = await operation(page, tag, operationId)
  await block.locator('.opblock-summary').first().click()
  await block.locator('button.try-out__btn').click()
  if (fill) await fill(block)
  await block.locator('button.execute').click()
  const answer = block.locator('.live-responses-table .response').first()
  await answer.waitFor({ timeout: 30_000 })
  return {
    status: Number((await answer.locator('.response-col_status').innerText()).trim()),
    body: await answer.locator('.response-col_description pre').first().innerText(),
    url: await block.locator('.request-url pre').innerText()
  }
}

// The interactive reference (/docs, Swagger UI) as a new user meets it, in Chromium against a
// listening server: a list run with the form's defaults answers 200.
describe.skipIf(missing)('/docs in a browser', () => {
  let served: ServedApp
  let t: TestApp
  let acme: Tenant
  let page: Page
  let base: string

  beforeAll(async () => {
    // The document names this server, so "Try it out" sends its requests here.
    served = await servedInBrowser((address) => ({ publicUrl: address }))
    t = served.t
    base = served.base
    acme = await createTenant(t)
    page = await served.browser.newPage()
    await page.goto(`${base}/docs`)
    await page.locator('#operations-contacts-find_contacts').waitFor({ timeout: 60_000 })
  }, 120_000)
  afterAll(async () => {
    await served?.close()
  })

  it('when the page opens, then no warning banner is shown and placeholders in angle brackets are visible', async () => {
    const banners = await page.locator('.errors-wrapper').allInnerTexts()
    expect(banners.join('\n')).not.toMatch(/jsonSchemaDialect/)
    const description = await page.locator('.information-container .info .description').innerText()
    expect(description).toContain('Authorization: Bearer <JWT>')
    expect(description).toContain('<path>#<method>')
  })

  it('when the page opens, then its first sections are contacts, companies and deals, a filter narrows the operations to one section, and the Authorize dialog offers the API key and the JWT, each saying who uses it', async () => {
    // Swagger UI renders the sections as they scroll into view: their order is the one its state holds.
    const sections: string[] = await page.evaluate(() => (window as any).ui.specSelectors.taggedOperations().keySeq().toArray())
    expect(await page.locator('h3[data-tag]').first().getAttribute('data-tag')).toBe('contacts')
    expect(sections.slice(0, 3)).toEqual(['contacts', 'companies', 'deals'])
    expect(sections.at(-1)).toBe('health')

    const filter = page.locator('.operation-filter-input')
    await filter.fill('deals')
    await page.waitForFunction(() => document.querySelector('h3[data-tag]')?.getAttribute('data-tag') === 'deals')
    expect(await page.locator('h3[data-tag]').count()).toBe(1)
    await filter.fill('')
    await page.waitForFunction(() => document.querySelector('h3[data-tag]')?.getAttribute('data-tag') === 'contacts')

    await page.locator('.scheme-container button.authorize').click()
    const schemes = page.locator('.modal-ux form')
    expect(await schemes.count()).toBe(2)
    expect(await schemes.nth(0).innerText()).toContain('For integrations and scripts')
    expect(await schemes.nth(1).innerText()).toContain('For people and the apps they sign in to')
    await page.locator('.modal-ux button.close-modal').click()
    await page.locator('.modal-ux').waitFor({ state: 'detached' })
  }, 120_000)

  it('when authorized with an API key, then POST /companies with a body typed in, and GET /companies and GET /contacts with the form\'s defaults, answer 201 and 200', async () => {
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.locator('.scheme-container button.authorize').click()
    // One form per scheme in the dialog; the API key's names its header.
    const scheme = page.locator('.modal-ux form').filter({ hasText: 'x-api-key' })
    await scheme.locator('input').fill(acme.apiKey)
    await scheme.getByRole('button', { name: 'Apply credentials' }).click()
    await scheme.getByRole('button', { name: 'Remove authorization' }).waitFor()
    await scheme.getByRole('button', { name: 'Close' }).click()
    await page.locator('.modal-ux').waitFor({ state: 'detached' })

    const created = await execute(page, 'companies', 'create_companies', async (block) => {
      await block.locator('textarea.body-param__text').fill(JSON.stringify({ name: 'Typed In Ltd', industry: 'Software' }))
    })
    expect(created.status, created.body).toBe(201)
    expect(JSON.parse(created.body)).toMatchObject({ name: 'Typed In Ltd', organization_id: acme.organization.id })

    const companies = await execute(page, 'companies', 'find_companies')
    expect(companies.status, `${companies.url}\n${companies.body}`).toBe(200)
    expect(JSON.parse(companies.body).data.map((c: any) => c.name)).toEqual(['Typed In Ltd'])

    const contacts = await execute(page, 'contacts', 'find_contacts')
    expect(contacts.status, `${contacts.url}\n${contacts.body}`).toBe(200)
    expect(JSON.parse(contacts.body)).toMatchObject({ total: 0, data: [] })
  }, 180_000)

  it('when the other sync-enabled lists are executed with the form\'s defaults, then each answers 200', async () => {
    for (const [tag, operationId] of [['deals', 'find_deals'], ['deal-products', 'find_deal_products'], ['activities', 'find_activities'], ['products', 'find_products']]) {
      const listed = await execute(page, tag, operationId)
      expect(listed.status, `${listed.url}\n${listed.body}`).toBe(200)
      expect(listed.url).not.toMatch(/after|%24or|\$or/)
    }
  }, 240_000)
})
