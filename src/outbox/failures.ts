import { FeathersError } from '@feathersjs/errors'
import type { JobOutcome } from './worker.js'

// Not-null and check violations: the row itself breaks a rule of the table.
const PERMANENT_SQLSTATES = new Set(['23502', '23514'])

/**
 * Whether a failed attempt could succeed later, decided here for every topic. Retrying helps when
 * the far side or the way to it was briefly unable: a network or connection error, a timeout, a
 * 5xx, a 429, a serialization failure or deadlock, a database going away. It cannot help when the
 * work itself is refused: a database data exception (SQLSTATE class 22: a NUL byte, an invalid
 * byte sequence, a malformed value), a not-null or check violation, a validation error of our own
 * services (400, 422); a handler refuses explicitly with a 'failed' outcome. Anything else is
 * retried: the safe default.
 */
function isPermanent(error: unknown): boolean {
  if (error instanceof FeathersError) return error.code === 400 || error.code === 422
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && (code.startsWith('22') || PERMANENT_SQLSTATES.has(code))
}

/** HTTP answers worth another attempt: 5xx (the far side failed) and 429 (it asked to wait). */
export const isTransientStatus = (status: number) => status === 429 || status >= 500

/** The outcome of an attempt that threw: failed at once when permanent (with its SQLSTATE, if any), else retried. */
export function outcomeOfError(error: unknown): JobOutcome {
  const message = String((error as Error | null)?.message ?? error)
  if (!isPermanent(error)) return { status: 'retry', error: message }
  const code = (error as { code?: unknown }).code
  return { status: 'failed', error: message, result: { permanent: true, ...(typeof code === 'string' ? { code } : {}) } }
}
