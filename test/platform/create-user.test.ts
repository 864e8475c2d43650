import request from 'supertest'
import { afterAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.js'
import { leftovers, run } from '../helpers/process.js'

// `npm run create-user` as an operator runs it on a deployment with sign-up off: on a fresh
// embedded data directory, then what it made, used through the API of an application opened there.
const left = leftovers('crm-create-user-')
afterAll(() => left.clear())

async function createUser(dataDir: string, args: string[]) {
  const spawned = left.started(
    run('npm', ['run', '--silent', 'create-user', '--', ...args], { npm_config_update_notifier: 'false', LOG_LEVEL: 'warn', DATABASE_URL: '', DATA_DIR: dataDir, REDIS_URL: '', SIGNUP_ENABLED: 'false' })
  )
  const code = await spawned.exited
  return { code, ...spawned.output() }
}

describe('npm run create-user', () => {
  it('when it is given an e-mail, a password, an organization and --api-key, then the account logs in, owns the organization, and the printed key works; the same e-mail again is refused in one line', async () => {
    const dataDir = left.tempDir()
    const made = await createUser(dataDir, ['--email', 'Admin@Example.com', '--password', 'a long admin secret', '--first-name', 'Ada', '--organization', 'Analytical Engines', '--api-key'])
    expect(made.code, made.stderr).toBe(0)
    expect(made.stdout).toMatch(/^User #\d+ admin@example\.com created$/m)
    expect(made.stdout).not.toContain('a long admin secret')
    expect(made.stdout).toMatch(/^Organization #\d+ "Analytical Engines", owned by admin@example\.com$/m)
    const key = /API key \(shown this once\): (crm_\S+)/.exec(made.stdout)?.[1]
    expect(key).toBeDefined()

    const again = await createUser(dataDir, ['--email', 'admin@example.com'])
    expect(again.code).toBe(1)
    expect(again.stderr.trim().split('\n')).toHaveLength(1)
    expect(again.stderr).toMatch(/^Error: .*email is already taken/)

    const app = await createApp({ databaseUrl: '', dataDir, rateLimitEnabled: false, signupEnabled: false })
    await app.setup()
    try {
      const http = () => request(app.callback())
      const login = await http().post('/authentication').send({ strategy: 'local', email: 'admin@example.com', password: 'a long admin secret' })
      expect(login.status, JSON.stringify(login.body)).toBe(201)
      expect(login.body.user).toMatchObject({ first_name: 'Ada', last_name: null })
      const organizations = await http().get('/organizations').set('Authorization', `Bearer ${login.body.accessToken}`)
      expect(organizations.body.data.map((organization: { name: string }) => organization.name)).toEqual(['Analytical Engines'])
      const members = await http().get('/organizations-users').set('x-api-key', key!)
      expect(members.body.data).toEqual([expect.objectContaining({ user_id: login.body.user.id, role: 'owner' })])
      // The address gets its verification link, as at sign-up.
      expect(await app.get('knex')('mail_outbox').where({ recipient: 'admin@example.com', kind: 'email-verification' })).toHaveLength(1)
    } finally {
      await app.teardown()
    }
  }, 120_000)

  it('when no password is given, then one is made and printed; when --email is missing or --api-key comes without --organization, then one line of usage and exit 1', async () => {
    const dataDir = left.tempDir()
    const made = await createUser(dataDir, ['--email', 'ops@example.com'])
    expect(made.code, made.stderr).toBe(0)
    const password = /^User #\d+ ops@example\.com created, password: (\S{12,})$/m.exec(made.stdout)?.[1]
    expect(password).toBeDefined()
    for (const args of [['--password', 'whatever secret'], ['--email', 'x@example.com', '--api-key']]) {
      const refused = await createUser(dataDir, args)
      expect(refused.code).toBe(1)
      expect(refused.stderr).toMatch(/^Error: --(email is required|api-key needs --organization)/)
      expect(refused.stderr).toContain('usage: npm run create-user -- --email')
    }
    const app = await createApp({ databaseUrl: '', dataDir, rateLimitEnabled: false })
    await app.setup()
    try {
      const login = await request(app.callback()).post('/authentication').send({ strategy: 'local', email: 'ops@example.com', password })
      expect(login.status).toBe(201)
    } finally {
      await app.teardown()
    }
  }, 120_000)
})
