import type { HookContext } from '../declarations.js'

const loaded = new WeakMap<object, Map<string, Promise<unknown>>>()

/**
 * A value loaded at most once per service call and key: the rows a call resolves share one load,
 * and so do the records of a batch (checked in one call), so that a lookup a rule makes per record
 * costs one query per distinct key, not one per record. A failed load is forgotten.
 */
export function oncePerCall<T>(context: HookContext, key: string, load: () => Promise<T>): Promise<T> {
  let cache = loaded.get(context.params)
  if (!cache) loaded.set(context.params, (cache = new Map()))
  let value = cache.get(key) as Promise<T> | undefined
  if (!value) {
    value = load()
    cache.set(key, value)
    value.catch(() => cache!.delete(key))
  }
  return value
}
