import { BadRequest } from '@feathersjs/errors'
import { getDispatch, setDispatch } from '@feathersjs/schema'
import type { Resolver, ResolverStatus } from '@feathersjs/schema'
import type { HookContext, NextFunction } from '../declarations.js'
import { isRendered } from '../engine/rendered-answer.js'

type Row = Record<string, any>

/** Applies a function to whatever a method answers: one record, a list, or anything with a `data` array. */
export async function mapRecords(result: any, map: (record: Row) => Promise<Row>) {
  if (Array.isArray(result)) return Promise.all(result.map(map))
  if (result && Array.isArray(result.data)) return { ...result, data: await Promise.all(result.data.map(map)) }
  if (result && typeof result === 'object') return map(result)
  return result
}

async function applyResolvers(resolvers: Resolver<any, HookContext>[], record: Row, context: HookContext) {
  let resolved = record
  for (const resolver of resolvers) resolved = await resolveRecord(resolver, resolved, context, { original: record } as any)
  return resolved
}

/** One stored record as the API returns it: the result resolvers, then the external one (webhook payloads). */
export const representRecord =
  (resolvers: Resolver<any, HookContext>[], external?: Resolver<any, HookContext>) => async (record: Row, context: HookContext) => {
    if (isRendered(record)) return record
    const resolved = await applyResolvers(resolvers, record, context)
    return external ? resolveRecord(external, resolved, context) : resolved
  }

/**
 * The resolver of a column that is never sent (a hash, a storage column): the external resolvers
 * name it for each hidden property, and resolveRecord sets those without a call.
 */
export const hidden = async (): Promise<undefined> => undefined

/**
 * The properties an external resolver takes out of what is sent: reads (src/engine/read-model.ts)
 * never select them. A property it resolves otherwise (shown on some calls only, as a secret on
 * create) is left out of reads too: a read is never such a call.
 */
export const externalProperties = (external?: Resolver<any, HookContext>): string[] =>
  external ? Object.keys(external.options.properties as Record<string, unknown>) : []

/** A resolver's properties: those it hides, and those it resolves (sorted once per resolver). */
const propertiesOf = new WeakMap<Resolver<any, HookContext>, { hides: string[]; resolves: string[] }>()
function splitProperties(resolver: Resolver<any, HookContext>) {
  let split = propertiesOf.get(resolver)
  if (!split) {
    const names = resolver.propertyNames as string[]
    const properties = resolver.options.properties as Record<string, unknown>
    split = { hides: names.filter((name) => properties[name] === hidden), resolves: names.filter((name) => properties[name] !== hidden) }
    propertiesOf.set(resolver, split)
  }
  return split
}

/**
 * Resolver.resolve for one record, without its promise per column: Feathers' resolve awaits an
 * async function for every property of the record (about 20 for a contact) to copy values that
 * have no resolver. Here the record is copied once and only the resolver's own properties are
 * awaited (together, as Feathers does). The same result, except that a property resolved to
 * undefined is present as undefined (not written by JSON), and the same 'Error resolving data' 400;
 * a resolver with a converter or a schema goes through Feathers' own resolve.
 */
export async function resolveRecord(resolver: Resolver<any, HookContext>, data: Row, context: HookContext, status?: Partial<ResolverStatus<any, HookContext>>): Promise<Row> {
  const { converter, schema } = resolver.options
  if (converter || schema || Array.isArray(status?.properties)) return resolver.resolve(data, context, status)
  const { hides, resolves } = splitProperties(resolver)
  if (hides.length === 0 && resolves.length === 0) return data
  // A spread clone keeps the record's hidden class (V8 copies it in one step, and JSON.stringify
  // walks it fast); a property the resolver resolves to undefined stays as undefined, which no
  // transport writes, instead of being deleted (a delete would turn the object into a dictionary).
  const result: Row = { ...data }
  for (const name of hides) result[name] = undefined
  if (resolves.length === 0) return result
  let errors: Record<string, unknown> | undefined
  await Promise.all(resolves.map(async (name) => {
    try {
      result[name] = await resolver.resolveProperty(name as any, data, context, status)
    } catch (error: any) {
      errors ??= {}
      errors[name] = typeof error?.toJSON === 'function' ? error.toJSON() : { message: error?.message || error }
    }
  }))
  if (errors) throw new BadRequest('Error resolving data', errors)
  return result
}

/**
 * The one way results are resolved, for every method alike (a record, a list, a find page, a
 * search answer: Feathers' own resolvers treat {data: [...]} as a page only for find). The
 * result resolvers change context.result; the external resolver, which hides storage columns,
 * only shapes what is sent (context.dispatch, as Feathers' resolveExternal does), so internal
 * callers still see the stored record.
 */
export const resolveRecords =
  (resolvers: Resolver<any, HookContext>[], external?: Resolver<any, HookContext>) =>
  async (context: HookContext, next: NextFunction) => {
    await next()
    // Postgres wrote this answer in the API's shape already (src/engine/read-model.ts).
    if (isRendered(context.result)) return
    if (resolvers.length > 0) context.result = await mapRecords(context.result, (record) => applyResolvers(resolvers, record, context))
    const result = context.result
    if (!external || !result || typeof result !== 'object') return
    // A record keeps the dispatch it was given first (a service answering another's record).
    const sent = async (record: Row) => getDispatch(record) ?? setDispatch(record, await resolveRecord(external, record, context))
    const many = Array.isArray(result) || Array.isArray(result.data)
    context.dispatch = many ? getDispatch(result) ?? setDispatch(result, await mapRecords(result, sent)) : await sent(result)
  }
