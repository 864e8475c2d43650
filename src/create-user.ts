import crypto from 'node:crypto'
import { parseArgs } from 'node:util'
import { createApp } from './app.js'
import { migrate } from './db.js'
import { StartupError, exitOnStartupError } from './startup.js'
import { createApiKey, createOwnedOrganization, refusalAsOneLine } from './account-steps.js'

// `npm run create-user -- --email … [--password …] [--first-name …] [--last-name …]
// [--organization "Name" [--api-key]]`: an account on the configured database, for deployments
// where sign-up is off (SIGNUP_ENABLED=false), optionally with an organization it owns and an API
// key of it. Through the services, as sign-up and the README's steps over HTTP: the address gets
// its verification mail through the outbox. Without --password a random one is made and printed.

const USAGE = 'usage: npm run create-user -- --email ada@example.com [--password …] [--first-name Ada] [--last-name Lovelace] [--organization "Name" [--api-key]]'

function options() {
  try {
    const { values } = parseArgs({
      options: {
        email: { type: 'string' },
        password: { type: 'string' },
        'first-name': { type: 'string' },
        'last-name': { type: 'string' },
        organization: { type: 'string' },
        'api-key': { type: 'boolean', default: false }
      }
    })
    if (!values.email) throw new Error('--email is required')
    if (values['api-key'] && !values.organization) throw new Error('--api-key needs --organization: a key belongs to an organization')
    return values as typeof values & { email: string }
  } catch (error: any) {
    throw new StartupError(`${error.message}\n${USAGE}`)
  }
}

async function createUser() {
  const args = options()
  const app = await createApp()
  try {
    await migrate(app.get('knex'))
    const password = args.password ?? crypto.randomBytes(12).toString('base64url')
    const user = await app.service('users').create({ email: args.email, password, first_name: args['first-name'] ?? null, last_name: args['last-name'] ?? null })
    const lines = [`User #${user.id} ${user.email} created${args.password ? '' : `, password: ${password}`}`]
    if (args.organization) {
      const organization = await createOwnedOrganization(app, user.id, args.organization)
      lines.push(`Organization #${organization.id} "${organization.name}", owned by ${user.email}`)
      if (args['api-key']) lines.push(`API key (shown this once): ${(await createApiKey(app, user.id, organization.id, 'create-user')).key}`)
    }
    console.log(lines.join('\n'))
  } catch (error) {
    throw refusalAsOneLine(error)
  } finally {
    await app.teardown()
  }
}

await createUser().catch((error) => exitOnStartupError(error, process.env.DATABASE_URL))
