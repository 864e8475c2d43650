// For the knex CLI (e.g. `npx knex migrate:make name`). The service itself migrates at start.
const config = {
  client: 'pg',
  connection: process.env.DATABASE_URL,
  migrations: { directory: './migrations', loadExtensions: ['.ts'] }
}
export default config
