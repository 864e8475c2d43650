import type { Resolver } from '@feathersjs/schema'
import type { HookContext, NextFunction } from '../declarations.js'

/**
 * The one way results are resolved: whatever a method answers (one record, a list, or anything
 * with a `data` array: a find page, a search answer) goes through the resource's result
 * resolvers in order, and, for external calls only, through its external resolver, which hides
 * storage columns. Feathers' own resolveResult treats {data: [...]} as a page only for find;
 * this hook treats every method alike.
 */
export const resolveRecords =
  (resolvers: Resolver<any, HookContext>[], external?: Resolver<any, HookContext>) =>
  async (context: HookContext, next: NextFunction) => {
    await next()
    const chain = context.params.provider && external ? [...resolvers, external] : resolvers
    if (chain.length === 0) return
    const resolve = async (record: Record<string, any>) => {
      let resolved = record
      for (const resolver of chain) resolved = await resolver.resolve(resolved, context, { original: record } as any)
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
