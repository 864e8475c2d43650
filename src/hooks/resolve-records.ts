import type { Resolver } from '@feathersjs/schema'
import type { HookContext, NextFunction } from '../declarations.js'

/**
 * Resolves whatever a method answers with the resource's result resolvers, in order: one record,
 * a list, or anything with a `data` array (a find page, a search answer). Feathers' own
 * resolveResult treats {data: [...]} as a page only for find, so resources with custom methods
 * use this single around hook for all their methods instead of one resolver list per method.
 */
export const resolveRecords =
  (...resolvers: Resolver<any, HookContext>[]) =>
  async (context: HookContext, next: NextFunction) => {
    await next()
    const resolve = async (record: Record<string, any>) => {
      let resolved = record
      for (const resolver of resolvers) resolved = await resolver.resolve(resolved, context, { original: record } as any)
      return resolved
    }
    const result = context.result as any
    if (Array.isArray(result)) {
      context.result = await Promise.all(result.map(resolve))
    } else if (result && Array.isArray(result.data)) {
      context.result = { ...result, data: await Promise.all(result.data.map(resolve)) }
    } else if (result && typeof result === 'object') {
      context.result = await resolve(result)
    }
  }
