import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTenant } from '../helpers/fixtures.js'
import { browserMissing, servedInBrowser } from '../helpers/browser.js'
import type { ServedApp } from '../helpers/browser.js'
import { bookableLink, inDays } from './fixtures.js'

const missing = browserMissing()

/** The booking page the service serves for a public booking link, as a person uses it in Chromium. */
describe.skipIf(missing)(`the booking page in a browser${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let served: ServedApp

  beforeAll(async () => {
    served = await servedInBrowser()
  })
  afterAll(async () => {
    await served?.close()
  })

  it("when a visitor opens a link's page, picks a day and a time and gives their details, then the page says booked and the reservation exists", async () => {
    const { t, base, browser } = served
    const tenant = await createTenant(t, 'Salon')
    const { service, slug } = await bookableLink(t, tenant, `salon-page-${tenant.organization.id}`)
    const page = await browser.newPage()
    try {
      const opened = await page.goto(`${base}/public/booking-links/${slug}/page`)
      expect(opened!.headers()['content-type']).toBe('text/html; charset=utf-8')
      await page.getByLabel('Service').waitFor()
      expect(await page.getByLabel('Service').locator('option').allTextContents()).toEqual(['Session (60 min)'])
      const day = inDays(3)
      await page.getByLabel('Day').fill(day)
      await page.getByLabel('Day').dispatchEvent('change')
      await page.getByRole('button', { name: '09:00' }).click()
      await page.getByLabel('First name').fill('Marta')
      await page.getByLabel('E-mail').fill('marta@example.test')
      await page.getByRole('button', { name: 'Book' }).click()
      await page.getByText(/^Booked: Session on /).waitFor()
      const stored = await t.db('reservations').where({ organization_id: tenant.organization.id, service_id: service.id })
      expect(stored).toHaveLength(1)
      expect(new Date(stored[0].start_datetime).toISOString()).toBe(`${day}T09:00:00.000Z`)
    } finally {
      await page.close()
    }
  })

  it('when the link does not exist, then the page says so', async () => {
    const page = await served.browser.newPage()
    try {
      await page.goto(`${served.base}/public/booking-links/nothing-here/page`)
      await page.getByText('This booking link is not valid.').waitFor()
    } finally {
      await page.close()
    }
  })
})
