import { isTransientStatus } from '../../../../outbox/failures.js'
import type { AccountCheck, ProviderError, SendOutcome } from './types.js'

/** How long a provider call may take before it counts as a timeout (retried). */
const REQUEST_TIMEOUT_MS = 15_000

/** Retry-After: delay-seconds or an HTTP date. */
export function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined
  const seconds = Number(header)
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

/**
 * One call to a provider's send API, classified: a 2xx answers its JSON body; a timeout, a
 * network error, a 5xx or a 429 is retryable (honouring Retry-After); any other 4xx is final,
 * with the provider's error read by errorOf.
 */
export async function callProvider(
  url: string,
  init: RequestInit,
  errorOf: (status: number, body: any) => ProviderError
): Promise<{ ok: true; body: any } | Extract<SendOutcome, { ok: false }>> {
  let response: Response
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  } catch (error: any) {
    const timeout = error?.name === 'TimeoutError'
    return { ok: false, retryable: true, error: { code: timeout ? 'timeout' : 'network_error', message: timeout ? 'the provider did not answer in time' : String(error?.cause?.code ?? error?.message ?? error) } }
  }
  const text = await response.text()
  let body: any = null
  try {
    body = text ? JSON.parse(text) : null
  } catch {
    body = null
  }
  if (response.ok) return { ok: true, body }
  const retryable = isTransientStatus(response.status)
  return { ok: false, retryable, retryAfterMs: retryAfterMs(response.headers.get('retry-after')), error: errorOf(response.status, body) }
}

/** An account check whose call to the provider failed: the credentials were refused, or the provider could not be asked. */
export const failedAccountCheck = (answer: Extract<SendOutcome, { ok: false }>): AccountCheck => ({
  ok: false,
  retryable: answer.retryable,
  unreachable: answer.error.code === 'timeout' || answer.error.code === 'network_error',
  field: 'credentials',
  message: answer.error.message
})
