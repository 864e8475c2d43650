import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort, run, waitForHealth } from '../helpers/process.js'
import type { Spawned } from '../helpers/process.js'

// A 1×1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')

const started: Spawned[] = []
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-public-url-'))
afterAll(() => {
  for (const spawned of started) spawned.kill()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

const npm = (args: string[], env: Record<string, string>) => {
  const spawned = run('npm', args, { LOG_LEVEL: 'warn', npm_config_update_notifier: 'false', DATABASE_URL: '', DATA_DIR: dataDir, PUBLIC_URL: '', APP_URL: '', S3_BUCKET: '', ...env })
  started.push(spawned)
  return spawned
}

describe('PUBLIC_URL', () => {
  it('when only PORT is set, then stored-file and signed-upload URLs point at http://localhost:<PORT>, and work', async () => {
    const seed = npm(['run', 'seed'], {})
    expect(await seed.exited, seed.output().stderr).toBe(0)
    const key = /API key:\s+(crm_\S+)/.exec(seed.output().stdout)![1]

    const port = await freePort()
    const server = npm(['start'], { PORT: String(port) })
    await waitForHealth(port, 150_000)
    // A failed request says why, with what the server printed.
    const fetch = (url: string, init?: RequestInit) =>
      globalThis.fetch(url, init).catch((error) => {
        throw new Error(`${init?.method ?? 'GET'} ${url}: ${error.cause ?? error}\n${server.output().stderr}`)
      })

    const signing = await fetch(`http://127.0.0.1:${port}/storage-url-signing`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ type: 'booking-link-logo', file_name: 'logo.png', content_type: 'image/png', file_size: PNG.length })
    })
    expect(signing.status).toBe(201)
    const signed = await signing.json()
    const own = `http://localhost:${port}/`
    expect(signed.upload_url.startsWith(own), signed.upload_url).toBe(true)
    expect(signed.public_url.startsWith(own), signed.public_url).toBe(true)

    const upload = await fetch(signed.upload_url, { method: 'PUT', headers: signed.headers, body: PNG })
    expect(upload.status).toBeLessThan(300)
    const stored = await fetch(signed.public_url)
    expect(stored.status).toBe(200)
    expect(Buffer.from(await stored.arrayBuffer()).equals(PNG)).toBe(true)
  }, 240_000)
})
