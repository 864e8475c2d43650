import fs from 'node:fs'
import { chromium } from 'playwright-core'
import type { Browser } from 'playwright-core'

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
