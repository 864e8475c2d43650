import { BadRequest } from '@feathersjs/errors'
import type { HookContext } from '../declarations.js'

/** An IANA time zone name the runtime knows (Europe/Madrid, UTC). */
export const isTimeZone = (name: string) => {
  if (name.length === 0) return false
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name })
    return true
  } catch {
    return false
  }
}

/** Before hook of every resource with a time zone: data.timezone, when sent, must be an IANA name. */
export const checkTimeZone = async (context: HookContext) => {
  const timezone = (context.data as Record<string, unknown> | undefined)?.timezone
  if (typeof timezone === 'string' && !isTimeZone(timezone)) {
    throw new BadRequest('Validation failed', { errors: { timezone: 'must be an IANA time zone name' } })
  }
  return context
}
