import type { Resolver } from '@feathersjs/schema'
import type { HookContext, NextFunction } from '../declarations.js'

/**
 * Feathers resolves a {data: [...]} result as a page only for find. Custom methods that answer
 * with {data: [...]} (search) use this around hook to resolve each row with the resource's
 * result and external resolvers, exactly as find would.
 */
export const resolveRowsOfData =
  (...resolvers: Resolver<any, HookContext>[]) =>
  async (context: HookContext, next: NextFunction) => {
    await next()
    const result = context.result as { data?: unknown[] }
    if (!result || !Array.isArray(result.data)) return
    let rows = result.data as Record<string, any>[]
    for (const resolver of resolvers) {
      rows = await Promise.all(rows.map((row) => resolver.resolve(row, context, { original: row } as any)))
    }
    context.result = { ...result, data: rows }
  }
