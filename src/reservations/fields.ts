import { BadRequest } from '@feathersjs/errors'
import { Type } from '@feathersjs/typebox'
import type { HookContext } from '../declarations.js'
import { Nullable } from '../schemas.js'

/** An IANA time zone name; null means "the organization's". Checked by checkTimeZone. */
export const TimeZoneField = Nullable(Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone name, e.g. Europe/Madrid; null: the organization\'s' }))

/** A wall-clock time of day, HH:MM or HH:MM:SS (24:00 allowed as an end); returned as HH:MM:SS. */
export const TimeOfDay = Type.String({ pattern: '^(([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d)?|24:00(:00)?)$', description: 'wall-clock time HH:MM[:SS] in the resource\'s time zone' })

export const CalendarDate = Type.String({ format: 'date', description: 'YYYY-MM-DD' })

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
