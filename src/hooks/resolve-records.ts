import { getDispatch, setDispatch } from '@feathersjs/schema'
import type { Resolver } from '@feathersjs/schema'
import type { HookContext, NextFunction } from '../declarations.js'

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
  for (const resolver of resolvers) resolved = await resolver.resolve(resolved, context, { original: record } as any)
  return resolved
}

/** One stored record as the API returns it: the result resolvers, then the external one (webhook payloads). */
export const representRecord =
  (resolvers: Resolver<any, HookContext>[], external?: Resolver<any, HookContext>) => async (record: Row, context: HookContext) => {
    const resolved = await applyResolvers(resolvers, record, context)
    return external ? external.resolve(resolved, context) : resolved
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
    if (resolvers.length > 0) context.result = await mapRecords(context.result, (record) => applyResolvers(resolvers, record, context))
    const result = context.result
    if (!external || !result || typeof result !== 'object') return
    // A record keeps the dispatch it was given first (a service answering another's record).
    const sent = async (record: Row) => getDispatch(record) ?? setDispatch(record, await external.resolve(record, context))
    const many = Array.isArray(result) || Array.isArray(result.data)
    context.dispatch = many ? getDispatch(result) ?? setDispatch(result, await mapRecords(result, sent)) : await sent(result)
  }
