import { spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import type { ChildProcess } from 'node:child_process'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { scratchDatabase } from './databases.js'
import type { ScratchDatabase } from './databases.js'

/** A free loopback port (the kernel's choice, released at once). */
export async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

export interface Spawned {
  child: ChildProcess
  output: () => { stdout: string; stderr: string }
  exited: Promise<number | null>
  /** Whether any process of the child's process group is still alive. */
  groupAlive: () => boolean
  /** Kills whatever is left of the process group (cleanup). */
  kill: () => void
}

/** Runs a command in its own process group, in the repository, with env added to ours. */
export function run(command: string, args: string[], env: Record<string, string>): Spawned {
  const child = spawn(command, args, { env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => (stdout += chunk))
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const groupAlive = () => {
    try {
      process.kill(-child.pid!, 0)
      return true
    } catch {
      return false
    }
  }
  return {
    child,
    output: () => ({ stdout, stderr }),
    exited,
    groupAlive,
    kill: () => {
      if (groupAlive()) process.kill(-child.pid!, 'SIGKILL')
    }
  }
}

/**
 * What a test file leaves behind: the processes it started, its temporary directories (named
 * dirPrefix...) and its scratch databases; clear(), in its afterAll, removes them all.
 */
export function leftovers(dirPrefix: string) {
  const processes: Spawned[] = []
  const dirs: string[] = []
  const databases: ScratchDatabase[] = []
  return {
    started(spawned: Spawned) {
      processes.push(spawned)
      return spawned
    },
    tempDir() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), dirPrefix))
      dirs.push(dir)
      return dir
    },
    async scratchDatabase(serverUrl: string, prefix: string) {
      const scratch = await scratchDatabase(serverUrl, prefix)
      databases.push(scratch)
      return scratch
    },
    async clear() {
      for (const spawned of processes) spawned.kill()
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
      for (const scratch of databases) await scratch.drop()
    }
  }
}

/** Resolves once GET /health answers 200, or rejects after timeoutMs. */
export async function waitForHealth(port: number, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/health`)
      if (response.ok) return
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`no /health on port ${port} within ${timeoutMs} ms`)
}

/** Whether something accepts connections on the loopback port. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/** Polls until condition() holds; false when timeoutMs passes first. */
export async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await condition()) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return condition()
}

/** One request through a keep-alive agent and what became of it, with the times a fault test needs. */
export interface Exchange {
  method: string
  path: string
  /** When the request was started (Date.now(), the clock the server's log lines use too). */
  startedAt: number
  /** When the whole request had been handed to the kernel; unset if it never was. */
  sentAt?: number
  answeredAt?: number
  /** Which connection carried it: numbered in the order this process opened them. */
  connection?: number
  status?: number
  headers?: http.IncomingHttpHeaders
  body?: any
  /** The network error in place of an answer (ECONNRESET, ECONNREFUSED, ...). */
  error?: string
}

const connectionNumbers = new WeakMap<object, number>()
let connectionsOpened = 0

/**
 * Sends one JSON request to the loopback port through agent and records what happened; never
 * rejects. With holdBodyUntil, the headers and half the body go at once, the rest once it resolves.
 */
export function exchange(
  agent: http.Agent,
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
  holdBodyUntil?: Promise<unknown>
): Promise<Exchange> {
  const record: Exchange = { method, path, startedAt: Date.now() }
  const payload = body === undefined ? undefined : JSON.stringify(body)
  return new Promise((resolve) => {
    const request = http.request({
      agent,
      host: '127.0.0.1',
      port,
      method,
      path,
      headers: { ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }) }
    })
    request.on('socket', (socket) => {
      if (!connectionNumbers.has(socket)) connectionNumbers.set(socket, ++connectionsOpened)
      record.connection = connectionNumbers.get(socket)
    })
    request.on('finish', () => (record.sentAt = Date.now()))
    request.on('response', (response) => {
      record.answeredAt = Date.now()
      record.status = response.statusCode
      record.headers = response.headers
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk) => (text += chunk))
      response.on('end', () => {
        try {
          record.body = text ? JSON.parse(text) : undefined
        } catch {
          record.body = text
        }
        resolve(record)
      })
      response.on('error', (error: NodeJS.ErrnoException) => resolve({ ...record, error: error.code ?? error.message }))
    })
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ ...record, error: error.code ?? error.message }))
    if (!holdBodyUntil || !payload) return request.end(payload)
    const half = Math.floor(payload.length / 2)
    request.write(payload.slice(0, half))
    void holdBodyUntil.then(() => request.end(payload.slice(half)))
  })
}
