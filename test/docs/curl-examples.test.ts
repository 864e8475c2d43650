import { spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { scratchDatabase } from '../helpers/databases.js'
import type { ScratchDatabase } from '../helpers/databases.js'
import { createKnex, migrate } from '../../src/db.js'

/**
 * Every code example of README.md and docs/*.md runs against a started server, so the
 * documentation cannot rot. Per file, the blocks run in document order in ONE bash process:
 * the ```sh / ```bash blocks as they are (variables set by a block are there for the next ones),
 * with `set -euo pipefail` and curl failing on any HTTP error (--fail-with-body); a ```js block
 * with node, and a ```ts block with node and tsx, each saved to a file of its own in a directory
 * that reaches the project's packages (node_modules) and sources (src), as if run from the
 * project's directory. A script reads what the shell part exported (API, KEY, ...) from its
 * environment, and must exit by itself (close its sockets) within SCRIPT_TIMEOUT_S. Markers, an
 * HTML comment on the line(s) right before a block:
 *   <!-- example: expect-error -->   the block shows an error on purpose: curl runs without
 *                                    --fail, and at least one of its calls must answer >= 400;
 *   <!-- example: skip (reason) -->  the block cannot run here (the reason is required).
 * A block that starts the server (`npm start`, `npm ci`) is never run.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const DOC_FILES = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)]

export interface ExampleBlock {
  file: string
  /** 1-based line of the opening fence. */
  line: number
  code: string
  mode: 'run' | 'expect-error' | 'skip'
  runner: 'bash' | 'node' | 'tsx'
  reason?: string
}

const MARKER = /^<!--\s*example:\s*(expect-error|skip)\s*(?:\((.*)\))?\s*-->$/

/** How the harness runs a block, by the language of its fence. */
const RUNNERS: Record<string, ExampleBlock['runner']> = { sh: 'bash', bash: 'bash', js: 'node', mjs: 'node', javascript: 'node', ts: 'tsx' }
const SCRIPT_TIMEOUT_S = 60
/** What a file's working directory holds before its walk-through runs: the project's packages and sources. */
const PROJECT_LINKS = ['node_modules', 'src']

/** The fenced shell, JavaScript and TypeScript blocks of a markdown text, with their markers. */
export function extractExamples(file: string, markdown: string): ExampleBlock[] {
  const lines = markdown.split('\n')
  const blocks: ExampleBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i])
    if (!open) continue
    const fence = open[2]
    const lang = open[3].toLowerCase()
    let end = i + 1
    while (end < lines.length && !lines[end].trimStart().startsWith(fence)) end++
    const code = lines.slice(i + 1, end).join('\n')
    const start = i
    i = end
    const runner = RUNNERS[lang]
    if (!runner) continue
    // The marker: the nearest non-blank line before the fence.
    let m = start - 1
    while (m >= 0 && lines[m].trim() === '') m--
    const marker = m >= 0 ? MARKER.exec(lines[m].trim()) : null
    const block: ExampleBlock = { file, line: start + 1, code, mode: 'run', runner }
    if (marker) {
      block.mode = marker[1] as ExampleBlock['mode']
      if (block.mode === 'skip') {
        if (!marker[2]?.trim()) throw new Error(`${file}:${start + 1}: a skipped example needs a reason: <!-- example: skip (why) -->`)
        block.reason = marker[2].trim()
      }
    } else if (runner === 'bash' && code.split('\n').some((l) => /\bnpm\s+(start|ci)\b/.test(l.replace(/(^|\s)#.*$/, '')))) {
      block.mode = 'skip'
      block.reason = 'starts the server'
    }
    blocks.push(block)
  }
  return blocks
}

const FAIL_ON_ERROR = `curl() { command curl --fail-with-body -sS "$@"; }`
// Without --fail; every transfer's status goes to stderr for the expect-error check.
const REPORT_STATUS = `curl() { command curl -sS -w '%{stderr}\\n@@http %{http_code}\\n' "$@"; }`

/** One bash script for a file's runnable blocks; each block is announced on stdout and stderr. */
export function buildScript(blocks: ExampleBlock[]): string {
  const parts = ['set -euo pipefail', FAIL_ON_ERROR]
  for (const block of blocks) {
    if (block.mode === 'skip') continue
    parts.push(`printf '\\n@@block %s\\n' ${block.line}; printf '\\n@@block %s\\n' ${block.line} >&2`)
    if (block.mode === 'expect-error') parts.push(REPORT_STATUS)
    parts.push(block.runner === 'bash' ? block.code : scriptRun(block))
    if (block.mode === 'expect-error') parts.push(FAIL_ON_ERROR)
  }
  parts.push(`printf '\\n@@done\\n'`)
  return parts.join('\n') + '\n'
}

/** Bash that saves a JavaScript or TypeScript block to a file of its own, runs it, bounded in time, and removes it. */
function scriptRun(block: ExampleBlock): string {
  const file = `example-${block.line}.${block.runner === 'tsx' ? 'mts' : 'mjs'}`
  const delimiter = `__EXAMPLE_${block.line}__`
  const node = block.runner === 'tsx' ? 'node --import tsx' : 'node'
  return [
    `cat > ${file} <<'${delimiter}'`,
    block.code,
    delimiter,
    `timeout ${SCRIPT_TIMEOUT_S} ${node} ${file} || { status=$?; [ $status = 124 ] && echo "${file} did not exit within ${SCRIPT_TIMEOUT_S} s: an example must close its sockets" >&2; exit $status; }`,
    `rm ${file}`
  ].join('\n')
}

interface RunResult { code: number | null; stdout: string; stderr: string }

// A file's walk-through runs many curl and node commands in a row; on a busy machine (the suite's
// other files run meanwhile) the longest ones (conversations, channels) need more than 30 s.
const EXAMPLE_TIMEOUT_MS = 90_000

/**
 * Runs the script in a process group of its own, and ends the group when bash exits: a walk-through
 * starts servers in the background (docs/channels.md's stand-ins), and one that stops early would
 * leave them holding the output pipes open, so the run would never end and the failing block would
 * go unreported.
 */
function runBash(script: string, env: NodeJS.ProcessEnv, cwd: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let stdout = ''
    let stderr = ''
    const endGroup = () => {
      try { process.kill(-child.pid!, 'SIGKILL') } catch { /* already gone */ }
    }
    child.stdout.on('data', (chunk) => { stdout += chunk })
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const timer = setTimeout(endGroup, EXAMPLE_TIMEOUT_MS - 5_000)
    child.on('error', reject)
    child.on('exit', endGroup)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** The output of each block, split at the @@block markers. */
function splitByBlock(output: string): Map<number, string> {
  const parts = new Map<number, string>()
  let current = 0
  for (const piece of output.split(/\n@@block (\d+)\n/).entries()) {
    const [index, text] = piece
    if (index % 2 === 1) current = Number(text)
    else parts.set(current, (parts.get(current) ?? '') + text)
  }
  return parts
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

describe('code examples in README.md and docs/', () => {
  let t: TestApp
  let server: http.Server
  let api: string
  let workDir: string
  let scratch: ScratchDatabase | undefined

  // The channels walk-through (docs/channels.md) starts its stand-ins for the Graph API and Twilio on these ports.
  let providerPorts: { graph: number; twilio: number }

  beforeAll(async () => {
    const port = await freePort()
    providerPorts = { graph: await freePort(), twilio: await freePort() }
    api = `http://127.0.0.1:${port}`
    // The README signs up ada@example.com: on a server database, a fresh database of its own
    // per run, so the walk-through works verbatim every time.
    let databaseUrl: string | undefined
    if (process.env.DATABASE_URL) {
      scratch = await scratchDatabase(process.env.DATABASE_URL, 'crm_docs_test')
      databaseUrl = scratch.url
      const db = await createKnex(databaseUrl, os.tmpdir(), 2)
      try { await migrate(db) } finally { await db.destroy() }
    }
    // docs/integrations.md posts webhooks to a receiver on this machine; docs/channels.md talks to provider stand-ins.
    t = await startApp({
      port, publicUrl: api, webhookAllowPrivate: true, ...(databaseUrl ? { databaseUrl } : {}),
      metaGraphUrl: `http://127.0.0.1:${providerPorts.graph}/v21.0`, twilioApiUrl: `http://127.0.0.1:${providerPorts.twilio}`
    })
    server = http.createServer(t.app.callback())
    // docs/realtime.md's scripts connect with Socket.io, as to npm start.
    ;(t.app as any).io.attach(server)
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-doc-examples-'))
  })

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve))
    server?.closeAllConnections?.()
    await t?.close()
    if (workDir) fs.rmSync(workDir, { recursive: true, force: true })
    await scratch?.drop()
  })

  it('every example in the docs uses $API for the service address', () => {
    for (const file of DOC_FILES) {
      for (const block of extractExamples(file, fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
        if (block.mode === 'skip') continue
        expect(block.code, `${file}:${block.line}`).not.toMatch(/localhost:3030\/|\$BASE_URL|\$API_KEY\b/)
      }
    }
  })

  it.concurrent.each(DOC_FILES)('%s: every example runs', async (file) => {
    const blocks = extractExamples(file, fs.readFileSync(path.join(ROOT, file), 'utf8'))
    const runnable = blocks.filter((b) => b.mode !== 'skip')
    if (runnable.length === 0) return
    const cwd = fs.mkdtempSync(path.join(workDir, `${path.basename(file, '.md')}-`))
    for (const dir of PROJECT_LINKS) fs.symlinkSync(path.join(ROOT, dir), path.join(cwd, dir))
    // As if run from the project directory: `node -e` in an example finds the project's packages.
    const env = {
      PATH: process.env.PATH, HOME: cwd, LANG: 'C.UTF-8', API: api, NODE_PATH: path.join(ROOT, 'node_modules'),
      GRAPH_PORT: String(providerPorts.graph), TWILIO_PORT: String(providerPorts.twilio)
    }
    const result = await runBash(buildScript(blocks), env, cwd)
    if (process.env.DOC_EXAMPLES_OUT) fs.writeFileSync(path.join(process.env.DOC_EXAMPLES_OUT, `${path.basename(file)}.out`), result.stdout + '\n--- stderr\n' + result.stderr)
    const out = splitByBlock(result.stdout)
    const err = splitByBlock(result.stderr)
    const failed = [...out.keys()].filter((k) => k > 0).pop()
    const tail = (s = '') => (s.length > 3000 ? '…' + s.slice(-3000) : s)
    expect(
      result.code,
      `${file}: the example block at line ${failed} failed (exit ${result.code})\n--- its output:\n${tail(out.get(failed!))}\n--- its stderr:\n${tail(err.get(failed!))}`
    ).toBe(0)
    expect(result.stdout).toContain('\n@@done\n')
    expect([...out.keys()].filter((k) => k > 0)).toEqual(runnable.map((b) => b.line))
    // Followed in the project's directory, a walk-through must leave no files there: it keeps them in a temporary directory.
    const left = fs.readdirSync(cwd).filter((name) => !PROJECT_LINKS.includes(name))
    expect(left, `${file}: the walk-through left files in its working directory`).toEqual([])
    for (const block of runnable.filter((b) => b.mode === 'expect-error')) {
      const statuses = [...(err.get(block.line) ?? '').matchAll(/@@http (\d{3})/g)].map((m) => Number(m[1]))
      expect(statuses.some((s) => s >= 400), `${file}:${block.line} is marked expect-error but answered ${statuses.join(', ')}`).toBe(true)
    }
  }, EXAMPLE_TIMEOUT_MS)
})
