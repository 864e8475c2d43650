import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { createApp } from '../app.js'
import { migrate } from '../db.js'
import { createLogger } from '../logger.js'
import { StartupError, exitOnStartupError } from '../startup.js'
import { mcpServer, openSession } from './server.js'

/**
 * `npm run mcp`: the MCP tools over stdio for desktop assistants, as the API key in MCP_API_KEY
 * (and the assistant in MCP_ASSISTANT_ID, if set) against the configured database. Standard
 * output carries the protocol only: logs go to standard error.
 */
async function main() {
  // The logger is made before the application reads its configuration, and quieter than the
  // service's default (warn, not info) unless LOG_LEVEL says otherwise.
  const app = await createApp({ logger: createLogger(process.env.LOG_LEVEL ?? 'warn', 'json', process.stderr) })
  await migrate(app.get('knex'))
  await app.setup()
  const session = await openSession(app, app.get('mcpApiKey') || undefined, app.get('mcpAssistantId') || undefined).catch((error) => {
    if (error?.code === 401) throw new StartupError('MCP_API_KEY is missing or is not an active API key of this database')
    if (error?.code === 400) throw new StartupError("MCP_ASSISTANT_ID is not an AI assistant of the key's organization")
    throw error
  })
  const server = mcpServer(app, session)
  const transport = new StdioServerTransport()
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await server.close()
    await app.teardown()
    process.exit(0)
  }
  transport.onclose = () => void stop()
  process.stdin.on('end', () => void stop())
  process.on('SIGTERM', () => void stop())
  process.on('SIGINT', () => void stop())
  await server.connect(transport)
}

main().catch((error) => exitOnStartupError(error, process.env.DATABASE_URL))
