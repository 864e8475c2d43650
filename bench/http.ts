import http from 'node:http'
import type autocannon from 'autocannon'

export interface BenchRequest {
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  headers?: Record<string, string>
  body?: unknown
}

/** One request with node:http (fetch refuses a GET with a body, which the spec's filters use). */
export function send(baseUrl: string, request: BenchRequest): Promise<{ status: number; body: any }> {
  const url = new URL(request.path, baseUrl)
  const payload = request.body === undefined ? undefined : JSON.stringify(request.body)
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: request.method,
        headers: {
          ...request.headers,
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {})
        }
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk) => (text += chunk))
        res.on('end', () => {
          let body: any = text
          try {
            body = JSON.parse(text)
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body })
        })
      }
    )
    req.on('error', reject)
    if (payload) req.write(payload)
    req.end()
  })
}

/** autocannon's request that sends the next request of a stream each time (no pipelining). */
export function autocannonRequest(next: () => BenchRequest): autocannon.Request {
  return {
    setupRequest: (request: any) => {
      const { method, path, headers, body } = next()
      const text = body === undefined ? undefined : JSON.stringify(body)
      return { ...request, method, path, headers: { ...headers, ...(text ? { 'content-type': 'application/json' } : {}) }, body: text }
    }
  }
}
