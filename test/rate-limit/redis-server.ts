import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import crypto from 'node:crypto'
import net from 'node:net'
import { Redis } from 'ioredis'

/** The shared Redis of CI (and of this machine); override with TEST_REDIS_URL. */
export const SHARED_REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379'

/** A key prefix no other test run uses, so runs never see each other's counts. */
export const uniquePrefix = () => `crm-test:rate-limit:${crypto.randomUUID()}:`

/**
 * A port below the kernel's ephemeral range (32768 and up on Linux), free right now. A port the
 * kernel handed out once can be taken again at any moment as the local end of some outgoing
 * connection of a test running beside this one, so a server meant to restart on its port avoids them.
 */
export async function quietPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + crypto.randomInt(12_000)
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer()
      probe.once('error', () => resolve(false))
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)))
    })
    if (free) return port
  }
}

/** A throw-away redis-server of our own on a spare port, which the test may stop and restart. */
export class OwnRedisServer {
  private child?: ChildProcess

  /** Not started yet: a closed port until start() is called. */
  constructor(readonly port: number) {}

  /** Started on a free port; a port lost to another process between the probe and the bind is replaced. */
  static async start() {
    for (let attempt = 1; ; attempt++) {
      const server = new OwnRedisServer(await quietPort())
      try {
        await server.start()
        return server
      } catch (error) {
        if (attempt === 3) throw error
      }
    }
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`
  }

  /** Runs redis-server in the foreground as our child, so a failed bind shows as its exit, not as silence. */
  async start() {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] })
    this.child = child
    let output = ''
    child.stdout!.on('data', (chunk) => (output += chunk))
    child.stderr!.on('data', (chunk) => (output += chunk))
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`redis-server on port ${this.port} exited (${code}): ${output.trim().split('\n').pop()}`))))
    exited.catch(() => undefined)
    await Promise.race([this.waitFor(async () => (await this.ping()) === 'PONG'), exited])
  }

  async stop() {
    const child = this.child
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
    await this.waitFor(async () => (await this.ping()) === undefined)
  }

  private async ping(): Promise<string | undefined> {
    const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 300 })
    client.on('error', () => undefined)
    try {
      await client.connect()
      return await client.ping()
    } catch {
      return undefined
    } finally {
      client.disconnect()
    }
  }

  private async waitFor(condition: () => Promise<boolean>) {
    for (let i = 0; i < 100; i++) {
      if (await condition()) return
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`redis-server on port ${this.port} did not change state`)
  }
}
