import { afterAll, describe, expect, it } from 'vitest'
import { freePort, leftovers, run, waitForHealth } from '../helpers/process.js'

// What the first `npm start` says while it starts, on a terminal and to a log collector.
const left = leftovers('crm-startup-lines-')
afterAll(() => left.clear())

/** `npm start` on a fresh embedded data directory until /health answers; `terminal` runs it under script(1), on a pseudo-terminal. */
async function startedOutput(terminal: boolean) {
  const port = await freePort()
  const env = { npm_config_update_notifier: 'false', PORT: String(port), DATA_DIR: left.tempDir(), DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: 'info', LOG_FORMAT: '' }
  const server = left.started(terminal ? run('script', ['-qfec', 'npm start', '/dev/null'], env) : run('npm', ['start'], env))
  await waitForHealth(port)
  server.kill()
  const { stdout } = server.output()
  return stdout.split(/\r?\n/).filter((line) => line.trim() && !/^>|^npm /.test(line.trim()))
}

// eslint-disable-next-line no-control-regex
const plain = (line: string) => line.replace(/\x1b\[[0-9;]*m/g, '')

describe('start-up lines', () => {
  it('when stdout is a terminal, then the lines are readable, with ISO times, and the first one says the embedded database is being created', async () => {
    const lines = (await startedOutput(true)).map(plain)
    expect(lines[0]).toMatch(/^\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\] INFO: Creating the embedded database in \S+pgdata/)
    expect(lines.some((line) => /INFO: CRM API listening/.test(line))).toBe(true)
    expect(lines.some((line) => line.startsWith('{'))).toBe(false)
  }, 90_000)

  it('when stdout is not a terminal, then every line is a JSON object, the first saying the embedded database is being created', async () => {
    const lines = await startedOutput(false)
    const records = lines.map((line) => JSON.parse(line))
    expect(records[0]).toMatchObject({ level: 30, msg: expect.stringMatching(/^Creating the embedded database in /) })
    expect(records.some((record) => record.msg === 'CRM API listening')).toBe(true)
  }, 90_000)
})
