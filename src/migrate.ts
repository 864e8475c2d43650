import { createApp } from './app.js'
import { migrate } from './db.js'
import { exitOnStartupError } from './startup.js'

// `npm run migrate`: applies pending migrations to the configured database and exits.
try {
  const app = await createApp()
  const [batch, applied] = await migrate(app.get('knex'))
  app.get('logger').info({ batch, applied }, applied.length ? 'migrations applied' : 'schema already current')
  await app.teardown()
} catch (error) {
  exitOnStartupError(error, process.env.DATABASE_URL)
}
