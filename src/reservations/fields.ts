import { BadRequest } from '@feathersjs/errors'
import type { HookContext } from '../declarations.js'

export { CalendarDate, EndTimeOfDay, TimeOfDay, TimeZoneField } from '../schemas.js'

export const isTimeZone = (name: string) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name })
    return true
  } catch {
    return false
  }
}

/** Before hook: data.timezone, when sent, must be an IANA name known to the runtime. */
export const checkTimeZone = async (context: HookContext) => {
  const timezone = (context.data as Record<string, unknown> | undefined)?.timezone
  if (typeof timezone === 'string' && !isTimeZone(timezone)) {
    throw new BadRequest('Validation failed', { errors: { timezone: 'must be an IANA time zone name' } })
  }
  return context
}

/** Seconds since midnight of an HH:MM[:SS] text, for comparisons. */
export const secondsOf = (time: string) => {
  const [h, m, s = 0] = time.split(':').map(Number)
  return h * 3600 + m * 60 + s
}
