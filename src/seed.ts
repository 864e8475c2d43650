import crypto from 'node:crypto'
import type { Knex } from 'knex'
import { createApp } from './app.js'
import { migrate } from './db.js'
import { generateApiKey } from './authentication.js'
import type { Application } from './declarations.js'
import { exitOnStartupError } from './startup.js'

// `npm run seed`: a demo owner, organization and API key on the configured database. Run again,
// it keeps the owner's password (someone may be using it) and the organization, and adds a key.
const DEMO_EMAIL = process.env.SEED_EMAIL ?? 'demo@example.com'
const DEMO_ORGANIZATION = 'Demo Organization'

/** The demo owner: created with a fresh password, or found (the password is then not known here). */
async function demoOwner(app: Application, db: Knex) {
  const existing = await db('users').whereRaw('lower(email) = ?', [DEMO_EMAIL.toLowerCase()]).first()
  if (existing) return { user: existing, password: undefined }
  const password = crypto.randomBytes(9).toString('base64url')
  const user = await app.service('users').create({ email: DEMO_EMAIL, password, first_name: 'Demo', last_name: 'Owner' })
  return { user, password }
}

/** The demo organization the owner already owns, or a new one. */
async function demoOrganization(db: Knex, userId: number) {
  const owned = await db('organizations')
    .join('organizations_users', 'organizations_users.organization_id', 'organizations.id')
    .where({ 'organizations_users.user_id': userId, 'organizations_users.role': 'owner', 'organizations.name': DEMO_ORGANIZATION })
    .first('organizations.*')
  if (owned) return owned
  return db.transaction(async (trx) => {
    const [org] = await trx('organizations').insert({ name: DEMO_ORGANIZATION }).returning('*')
    await trx('organizations_users').insert({ organization_id: org.id, user_id: userId, role: 'owner' })
    return org
  })
}

async function seed() {
  const app = await createApp()
  const db = app.get('knex')
  await migrate(db)
  const { user, password } = await demoOwner(app, db)
  const organization = await demoOrganization(db, user.id)
  const { key, prefix, hash } = generateApiKey()
  await db('api_keys').insert({ organization_id: organization.id, user_id: user.id, name: 'Seed key', prefix, key_hash: hash })

  console.log(
    [
      `Demo organization #${organization.id} "${organization.name}"`,
      `  login:    ${DEMO_EMAIL}`,
      `  password: ${password ?? 'unchanged (the one printed when this user was first seeded)'}`,
      `  API key:  ${key}`,
      '',
      `Try: curl -H "x-api-key: ${key}" http://localhost:${app.get('port')}/companies`
    ].join('\n')
  )
  // Teardown closes everything the app opened (the pool, and Redis connections when REDIS_URL is set).
  await app.teardown()
}

await seed().catch((error) => exitOnStartupError(error, process.env.DATABASE_URL))
