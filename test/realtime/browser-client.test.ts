import { createRequire } from 'node:module'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as esbuild from 'esbuild'
import type { Browser } from 'playwright-core'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'
import { browserMissing, launchBrowser } from '../helpers/browser.js'

/**
 * The typed client (src/client.ts) as a dashboard ships it: bundled by esbuild for the browser,
 * with the standard transports, and run in Chromium against the service (docs/realtime.md).
 */

const root = path.resolve(import.meta.dirname, '../..')
const resolvable = (name: string) => {
  try {
    createRequire(import.meta.url).resolve(name)
    return true
  } catch {
    return false
  }
}
// The Feathers Socket.io transport for clients (a devDependency, as @feathersjs/rest-client is a dependency).
const SOCKETIO_CLIENT = '@feathersjs/socketio-client'

async function bundle(withSocketTransport: boolean) {
  const contents = [
    "import { createClient } from './src/client.ts'",
    "import rest from '@feathersjs/rest-client'",
    "import { io } from 'socket.io-client'",
    withSocketTransport ? `import socketio from '${SOCKETIO_CLIENT}'` : 'const socketio = undefined',
    'window.crm = { createClient, rest, io, socketio }'
  ].join('\n')
  return esbuild.build({
    stdin: { contents, resolveDir: root, loader: 'ts', sourcefile: 'dashboard.ts' },
    bundle: true,
    platform: 'browser',
    format: 'iife',
    write: false,
    metafile: true,
    logLevel: 'silent'
  })
}

describe('the typed client in a browser bundle', () => {
  it('when src/client.ts is bundled for the browser with the REST and Socket.io transports, then nothing of Node is in it', async () => {
    const result = await bundle(resolvable(SOCKETIO_CLIENT))
    expect(result.errors).toEqual([])
    const inputs = Object.keys(result.metafile.inputs)
    expect(inputs).toContain('src/client.ts')
    expect(inputs.filter((input) => input.startsWith('node:') || /(^|\/)(fs|net|http|crypto|knex|pg|koa)(\/|$)/.test(input))).toEqual([])
    // The server's code stays out: the client carries the services' names and methods, not their implementation.
    expect(inputs.filter((input) => /src\/(engine|hooks|db|app)\b|\.class\.ts$/.test(input))).toEqual([])
  })

  describe.skipIf(browserMissing())('in Chromium', () => {
    let t: TestApp
    let sockets: Awaited<ReturnType<typeof serveSockets>>
    let browser: Browser
    let tenant: Tenant
    let code: string

    beforeAll(async () => {
      t = await startApp()
      sockets = await serveSockets(t)
      tenant = await createTenant(t, 'Browser')
      browser = await launchBrowser()
      code = (await bundle(resolvable(SOCKETIO_CLIENT))).outputFiles[0].text
    })
    afterAll(async () => {
      await browser?.close()
      await sockets?.close()
      await t?.close()
    })

    it('when a page creates a contact over REST (fetch), then the list it keeps live from the socket\'s events holds it', async () => {
      const page = await browser.newPage()
      try {
        // Same origin as the API: what a dashboard served next to it does.
        await page.goto(`${sockets.url}/health`)
        await page.addScriptTag({ content: code })
        const outcome = await page.evaluate(async ({ url, apiKey }) => {
          const { createClient, rest, io } = (window as any).crm
          const api = createClient(rest(url).fetch(window.fetch.bind(window), { headers: { 'x-api-key': apiKey } }))
          const list = new Map<number, any>()
          for (const contact of (await api.service('contacts').find({ query: { $limit: 100 } })).data) list.set(contact.id, contact)
          // The events: the socket authenticates in its handshake with the same key.
          const socket = io(url, { auth: { apiKey }, transports: ['websocket'] })
          await new Promise<void>((resolve, reject) => {
            socket.on('connect', () => resolve())
            socket.on('connect_error', reject)
          })
          const heard = new Promise<void>((resolve) => socket.on('contacts created', (contact: any) => {
            list.set(contact.id, contact)
            resolve()
          }))
          socket.on('contacts patched', (contact: any) => list.set(contact.id, contact))
          socket.on('contacts removed', (contact: any) => list.delete(contact.id))
          const created = await api.service('contacts').create({ first_name: 'Browser', last_name: 'Bundle' })
          await heard
          const patched = await api.service('contacts').patch(created.id, { last_name: 'Patched' })
          await new Promise((resolve) => setTimeout(resolve, 500))
          const afterPatch = list.get(created.id)?.last_name
          await api.service('contacts').remove(created.id)
          await new Promise((resolve) => setTimeout(resolve, 500))
          socket.disconnect()
          return { created, patched, afterPatch, stillListed: list.has(created.id) }
        }, { url: sockets.url, apiKey: tenant.apiKey })
        expect(outcome.created).toMatchObject({ first_name: 'Browser', organization_id: tenant.organization.id })
        expect(outcome.afterPatch).toBe('Patched')
        expect(outcome.stillListed).toBe(false)
      } finally {
        await page.close()
      }
    })

    it.skipIf(!resolvable(SOCKETIO_CLIENT))('when the typed client runs over the Feathers Socket.io transport, then its services hear their record events', async () => {
      const page = await browser.newPage()
      try {
        await page.goto(`${sockets.url}/health`)
        await page.addScriptTag({ content: code })
        const heard = page.evaluate(async ({ url, apiKey }) => {
          const { createClient, io, socketio } = (window as any).crm
          const live = createClient(socketio(io(url, { auth: { apiKey }, transports: ['websocket'] })))
          return new Promise<any>((resolve) => live.service('companies').on('created', resolve))
        }, { url: sockets.url, apiKey: tenant.apiKey })
        await new Promise((resolve) => setTimeout(resolve, 1_000))
        const company = await t.http().post('/companies').set(tenant.key).send({ name: 'Heard in the browser' })
        expect(company.status).toBe(201)
        expect(await heard).toEqual((await t.http().get(`/companies/${company.body.id}`).set(tenant.key)).body)
      } finally {
        await page.close()
      }
    })
  })
})
