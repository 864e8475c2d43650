import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ReceivedRequest {
  path: string
  headers: Record<string, string>
  body: string
}

/** What the receiver does with the next request: answer a status, or answer after a delay. */
export interface Answer {
  status: number
  delayMs?: number
}

/**
 * A webhook receiver on loopback that records every request it gets (path, headers, body) and
 * answers from a script of answers (then 200 once the script is used up).
 */
export async function startReceiver() {
  const received: ReceivedRequest[] = []
  const script: Answer[] = []
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk) => chunks.push(chunk))
    request.on('end', () => {
      received.push({ path: request.url ?? '', headers: request.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8') })
      const answer = script.shift() ?? { status: 200 }
      const reply = () => {
        if (response.destroyed) return
        response.statusCode = answer.status
        response.end('ok')
      }
      if (answer.delayMs) setTimeout(reply, answer.delayMs)
      else reply()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    port,
    url: (path = '/hooks') => `http://127.0.0.1:${port}${path}`,
    received,
    /** The next answers, in order. */
    answer: (...answers: Answer[]) => script.push(...answers),
    reset: () => {
      received.length = 0
      script.length = 0
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>
