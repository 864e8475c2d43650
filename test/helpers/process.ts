import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import net from 'node:net'

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
