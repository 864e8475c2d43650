import fs from 'node:fs'
import http from 'node:http'
import { chromium } from 'playwright-core'
import type { Browser } from 'playwright-core'
import type { Configuration } from '../../src/declarations.js'
import { startApp } from './app.js'
import type { TestApp } from './app.js'
import { freePort } from './process.js'

/** Debian's chromium (what .ci/run installs), or the one named by CHROMIUM_PATH. */
export function chromiumPath(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser']
  return candidates.find((candidate): candidate is string => !!candidate && fs.existsSync(candidate))
}

/**
 * Why browser tests cannot run here, or undefined when they can. In CI a missing browser is a
 * failure, not a skip: .ci/run installs it.
 */
export function browserMissing(): string | undefined {
  if (chromiumPath()) return undefined
  const why = 'no Chromium found (install Debian\'s chromium package or set CHROMIUM_PATH)'
  if (process.env.CI) throw new Error(why)
  return why
}

/**
 * Headless Chromium with a fresh profile (Playwright makes one per launch). The flags keep it off
 * the network it would otherwise call at start (component updates, sync, Google's hosts).
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage'
    ]
  })
}

export interface ServedApp {
  t: TestApp
  /** The server's address, http://127.0.0.1:<port>. */
  base: string
  browser: Browser
  close: () => Promise<void>
}

/**
 * The application listening on a free loopback port (a page's requests need a real server), and
 * a headless Chromium to open its pages. `overrides` gets the server's address.
 */
export async function servedInBrowser(overrides: (base: string) => Partial<Configuration> = () => ({})): Promise<ServedApp> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const t = await startApp({ port, ...overrides(base) })
  const server = http.createServer(t.app.callback())
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const browser = await launchBrowser()
  return {
    t,
    base,
    browser,
    close: async () => {
      await browser.close()
      await new Promise((resolve) => server.close(resolve))
      server.closeAllConnections?.()
      await t.close()
    }
  }
}
