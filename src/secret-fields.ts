import feathersCore from '@feathersjs/feathers'

/**
 * Secret fields: the credentials a service hands out once, in the answer of the call that made
 * them (a new API key, a webhook signing secret, an invitation token, a booking's manage token, a
 * web-chat visitor token). Each service declares its own once, with its registration (the service
 * option `secretFields`); nothing kept or forwarded after the answer may hold them: webhook events
 * and their stored deliveries (src/webhook-events.ts) and stored Idempotency-Key answers
 * (src/hooks/idempotency.ts) go through withoutSecrets.
 */

declare module '@feathersjs/feathers' {
  interface ServiceOptions {
    /** The fields of this service's answers that are secrets shown once (src/secret-fields.ts). */
    secretFields?: readonly string[]
  }
}

const NONE: readonly string[] = []

/** The secret fields a registered service declared (none for no service). */
export const secretFieldsOf = (service: object | undefined): readonly string[] =>
  (service && feathersCore.getServiceOptions(service)?.secretFields) || NONE

/**
 * An answer without its secret fields, and whether it had any: a record, a list of records or a
 * page ({data: [...]}). Records are copied, never changed in place (the caller still sends them).
 */
export function withoutSecrets(answer: unknown, fields: readonly string[]): { answer: unknown; withheld: boolean } {
  if (fields.length === 0) return { answer, withheld: false }
  let withheld = false
  const strip = (record: unknown) => {
    if (!record || typeof record !== 'object' || Array.isArray(record)) return record
    const present = fields.filter((field) => (record as Record<string, unknown>)[field] !== undefined)
    if (present.length === 0) return record
    withheld = true
    const copy: Record<string, unknown> = { ...(record as Record<string, unknown>) }
    for (const field of present) delete copy[field]
    return copy
  }
  const page = answer as { data?: unknown } | null
  const stripped = Array.isArray(answer)
    ? answer.map(strip)
    : page && typeof page === 'object' && Array.isArray(page.data)
      ? { ...page, data: page.data.map(strip) }
      : strip(answer)
  return { answer: stripped, withheld }
}
