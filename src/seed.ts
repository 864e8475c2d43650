import crypto from 'node:crypto'
import { createApp } from './app.js'
import { migrate } from './db.js'
import { generateApiKey } from './authentication.js'

// `npm run seed`: a demo owner, organization and API key on the configured database.
const DEMO_EMAIL = process.env.SEED_EMAIL ?? 'demo@example.com'

const app = await createApp()
const db = app.get('knex')
await migrate(db)

const password = crypto.randomBytes(9).toString('base64url')
const existing = await db('users').whereRaw('lower(email) = ?', [DEMO_EMAIL.toLowerCase()]).first()
const user = existing
  ? (await app.service('users').patch(existing.id, { password }, { system: true } as any), existing)
  : await app.service('users').create({ email: DEMO_EMAIL, password, first_name: 'Demo', last_name: 'Owner' })

const organization = await db.transaction(async (trx) => {
  const [org] = await trx('organizations').insert({ name: 'Demo Organization' }).returning('*')
  await trx('organizations_users').insert({ organization_id: org.id, user_id: user.id, role: 'owner' })
  return org
})
const { key, prefix, hash } = generateApiKey()
await db('api_keys').insert({ organization_id: organization.id, user_id: user.id, name: 'Seed key', prefix, key_hash: hash })

console.log(
  [
    `Demo organization #${organization.id} "${organization.name}"`,
    `  login:    ${DEMO_EMAIL}`,
    `  password: ${password}`,
    `  API key:  ${key}`,
    '',
    `Try: curl -H "x-api-key: ${key}" http://localhost:${app.get('port')}/companies`
  ].join('\n')
)
await db.destroy()
