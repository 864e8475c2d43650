import { execFileSync } from 'node:child_process'
import crypto from 'node:crypto'
import net from 'node:net'
import { Redis } from 'ioredis'

/** The shared Redis of CI (and of this machine); override with TEST_REDIS_URL. */
export const SHARED_REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379'

/** A key prefix no other test run uses, so runs never see each other's counts. */
export const uniquePrefix = () => `crm-test:rate-limit:${crypto.randomUUID()}:`

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** A throw-away redis-server of our own on a spare port, which the test may stop and restart. */
export class OwnRedisServer {
  /** Not started yet: a closed port until start() is called. */
  constructor(readonly port: number) {}

  static async start() {
    const server = new OwnRedisServer(await freePort())
    await server.start()
    return server
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`
  }

  async start() {
    execFileSync('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'yes'])
    await this.waitFor(async () => (await this.ping()) === 'PONG')
  }

  async stop() {
    try {
      execFileSync('redis-cli', ['-p', String(this.port), 'shutdown', 'nosave'], { stdio: 'ignore' })
    } catch {
      // redis-cli reports the dropped connection of a successful shutdown as an error.
    }
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
    for (let i = 0; i < 50; i++) {
      if (await condition()) return
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`redis-server on port ${this.port} did not change state`)
  }
}
