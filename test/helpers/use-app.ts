import { afterAll, beforeAll } from 'vitest'
import type { Configuration } from '../../src/declarations.js'
import { startApp } from './app.js'
import type { TestApp } from './app.js'
import { createTenant } from './fixtures.js'
import type { Tenant } from './fixtures.js'
import { serveSockets } from './sockets.js'
import type { SocketServer } from './sockets.js'

/** What useApp started: the app, its tenants in the order named, and its sockets when asked for. */
export interface UsedApp {
  t: TestApp
  tenants: Tenant[]
  sockets: SocketServer
}

export interface UseAppOptions {
  /** Organizations to create (createTenant), in this order: e.g. ['Acme', 'Globex'] for the cross-tenant checks. */
  tenants?: string[]
  /** Serve the app's Socket.io on a loopback port (serveSockets). */
  sockets?: boolean
  /** Settings of this app (startApp's overrides); a function when they depend on what an earlier beforeAll started. */
  config?: Partial<Configuration> | (() => Partial<Configuration>)
}

/**
 * The preamble of a test file (or describe block): its own application, started before its tests
 * with the tenants and sockets asked for, and closed after them. `ready` receives them once they
 * exist, to set the file's own variables:
 *
 *   let t: TestApp
 *   let acme: Tenant
 *   let globex: Tenant
 *   useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))
 */
export function useApp(options: UseAppOptions, ready: (app: UsedApp) => void) {
  let used: Partial<UsedApp> = {}
  beforeAll(async () => {
    const t = await startApp(typeof options.config === 'function' ? options.config() : options.config)
    used = { t }
    if (options.sockets) used.sockets = await serveSockets(t)
    const tenants: Tenant[] = []
    for (const name of options.tenants ?? []) tenants.push(await createTenant(t, name))
    used.tenants = tenants
    ready(used as UsedApp)
  })
  afterAll(async () => {
    await used.sockets?.close()
    await used.t?.close()
  })
}
