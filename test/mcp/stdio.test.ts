import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { run } from '../helpers/process.js'

// `npm run mcp` as a desktop assistant starts it: a child process speaking MCP on stdin/stdout,
// on the configured database (the test's Postgres, or an embedded one in a data directory).
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-mcp-stdio-'))
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))

const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? '',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  npm_config_update_notifier: 'false',
  SEED_EMAIL: `mcp-${crypto.randomUUID().slice(0, 8)}@example.test`
}

describe('npm run mcp', () => {
  it('when started with MCP_API_KEY, then an MCP client on its stdio lists the tools and calls one; closing the client ends the process', async () => {
    const seed = run('npm', ['run', 'seed'], env)
    expect(await seed.exited, seed.output().stderr).toBe(0)
    const apiKey = /API key:\s+(crm_\S+)/.exec(seed.output().stdout)![1]

    const transport = new StdioClientTransport({
      command: 'npm',
      args: ['run', '--silent', 'mcp'],
      env: { ...(process.env as Record<string, string>), ...env, MCP_API_KEY: apiKey },
      stderr: 'pipe'
    })
    let stderr = ''
    transport.stderr?.on('data', (chunk) => (stderr += chunk))
    const client = new Client({ name: 'desktop', version: '1.0.0' })
    // A loaded machine takes a while to start the child (tsx, migrations): more than the SDK's 60 s default.
    await client.connect(transport, { timeout: 150_000 })
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['get_available_slots', 'create_reservation', 'search_contacts', 'send_conversation_message']))
    expect(tools.map((tool) => tool.name)).toContain('export_contact_personal_data')
    expect(tools).toHaveLength(14)

    const made = await client.callTool({ name: 'create_contact', arguments: { first_name: 'Stdio', last_name: 'Caller' } })
    expect(made.isError, stderr).toBeFalsy()
    const contact = made.structuredContent as { id: number; first_name: string }
    const read = await client.callTool({ name: 'get_contact', arguments: { id: contact.id } })
    expect(read.structuredContent).toMatchObject({ id: contact.id, first_name: 'Stdio' })

    const pid = transport.pid!
    await client.close()
    const gone = await new Promise<boolean>((resolve) => {
      const deadline = Date.now() + 10_000
      const poll = () => {
        try {
          process.kill(pid, 0)
          if (Date.now() > deadline) return resolve(false)
          setTimeout(poll, 100)
        } catch {
          resolve(true)
        }
      }
      poll()
    })
    expect(gone).toBe(true)
  }, 240_000)

  it('when MCP_API_KEY is not a valid key, then the process says so on stderr in one line and exits 1', async () => {
    const refused = run('npm', ['run', 'mcp'], { ...env, MCP_API_KEY: 'crm_wrong_key' })
    expect(await refused.exited).toBe(1)
    const said = refused.output().stderr.split('\n').filter((line) => line.trim() && !/^npm (warn|error)|^>/.test(line.trim()))
    expect(said).toEqual([expect.stringContaining('MCP_API_KEY')])
    expect(refused.output().stdout.split('\n').filter((line) => line.trim() && !line.startsWith('>'))).toEqual([])
  }, 150_000)
})
