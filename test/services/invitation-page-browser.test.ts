import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { browserMissing, servedInBrowser } from '../helpers/browser.js'
import type { ServedApp } from '../helpers/browser.js'
import { createTenant, signUp, uniqueEmail } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

const missing = browserMissing()

// The acceptance page (APP_URL unset) as the invitee meets it, in Chromium against a listening server.
describe.skipIf(missing)('the invitation acceptance page in a browser', () => {
  let served: ServedApp
  let t: TestApp
  let acme: Tenant

  beforeAll(async () => {
    served = await servedInBrowser()
    t = served.t
    acme = await createTenant(t)
  }, 120_000)
  afterAll(async () => {
    await served?.close()
  })

  /** Invites the address and opens the page of its link, once it has looked the invitation up. */
  async function openInvitation(email: string): Promise<Page> {
    const invited = await t.http().post('/organizations-users-invites').set(acme.key).send({ email, role: 'member' })
    expect(invited.status, JSON.stringify(invited.body)).toBe(201)
    const page = await served.browser.newPage()
    await page.goto(`${served.base}/invitations/accept?token=${encodeURIComponent(invited.body.token)}`)
    await page.locator('#summary').filter({ hasText: 'is invited' }).waitFor()
    return page
  }
  const status = (page: Page, text: string) => page.locator('#result').filter({ hasText: text }).waitFor()
  const membership = (userId: number) => t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: userId }).first()

  it('when the invited address has an account, then creating one is refused with the sign-in message, a wrong password is named, and signing in accepts', async () => {
    const invitee = await signUp(t)
    const page = await openInvitation(invitee.user.email)
    try {
      await page.getByLabel('Password (at least 8 characters)').fill('a password of my choosing')
      await page.getByRole('button', { name: 'Create my account and accept' }).click()
      await status(page, 'sign in with the invited address\'s account')
      expect(await membership(invitee.user.id)).toBeUndefined()

      await page.locator('#sign_in_password').fill('not the password')
      await page.getByRole('button', { name: 'Sign in and accept' }).click()
      await page.locator('#sign-in-error').filter({ hasText: 'This password does not sign in' }).waitFor()
      expect(await membership(invitee.user.id)).toBeUndefined()

      await page.locator('#sign_in_password').fill(invitee.password)
      await page.getByRole('button', { name: 'Sign in and accept' }).click()
      await status(page, 'Welcome! You are now a member.')
      expect(await membership(invitee.user.id)).toMatchObject({ role: 'member' })
    } finally {
      await page.close()
    }
  })

  it('when the invited address has no account, then choosing a password creates it and accepts', async () => {
    const email = uniqueEmail('newcomer')
    const page = await openInvitation(email)
    try {
      await page.getByLabel('First name').fill('Grace')
      await page.getByLabel('Password (at least 8 characters)').fill('a long secret')
      await page.getByRole('button', { name: 'Create my account and accept' }).click()
      await status(page, 'Welcome! You are now a member.')
      const account = await t.db('users').where({ email }).first('id', 'first_name')
      expect(account).toMatchObject({ first_name: 'Grace' })
      expect(await membership(account.id)).toMatchObject({ role: 'member' })
      expect((await t.http().post('/authentication').send({ strategy: 'local', email, password: 'a long secret' })).status).toBe(201)
    } finally {
      await page.close()
    }
  })
})
