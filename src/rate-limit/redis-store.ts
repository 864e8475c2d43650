import type { Redis } from 'ioredis'
import { createRedis } from '../redis-pubsub.js'
import type { LogState, SlidingLogStore } from './sliding-log.js'

/**
 * One sorted set per key (score: instant in ms), changed by one Lua script, so the check and
 * the insert are a single atomic step for every instance that shares the Redis server. The
 * clock is Redis's own (TIME), so instances with skewed clocks still agree on the window.
 */
const HIT_SCRIPT = `
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local member = ARGV[3]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local added = 0
if count < limit then
  redis.call('ZADD', key, now, member)
  count = count + 1
  added = 1
end
if count > 0 then
  redis.call('PEXPIRE', key, window)
end
local oldest = now
if count > 0 then
  oldest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
end
return { added, count, now, oldest }
`

/**
 * The weighted log: members are 'member|units', and a second key holds the units in the window,
 * lowered by the units of the entries that leave it. A refused call learns when enough units
 * free up for it (the entry whose expiry makes room).
 */
const HIT_WEIGHTED_SCRIPT = `
local key = KEYS[1]
local totalKey = KEYS[2]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local member = ARGV[3]
local weight = tonumber(ARGV[4])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local function units(entry) return tonumber(string.match(entry, '|(%d+)$')) end
local total = tonumber(redis.call('GET', totalKey) or '0')
local expired = redis.call('ZRANGEBYSCORE', key, '-inf', now - window)
for _, entry in ipairs(expired) do total = total - units(entry) end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) == 0 then total = 0 end
local added = 0
if total + weight <= limit then
  redis.call('ZADD', key, now, member .. '|' .. weight)
  total = total + weight
  added = 1
end
local oldest = now
if total > 0 then
  local entries = redis.call('ZRANGE', key, 0, added == 1 and 0 or -1, 'WITHSCORES')
  local freed = 0
  for i = 1, #entries, 2 do
    oldest = tonumber(entries[i + 1])
    freed = freed + units(entries[i])
    if added == 1 or total - freed + weight <= limit then break end
  end
  redis.call('SET', totalKey, total, 'PX', window)
  redis.call('PEXPIRE', key, window)
else
  redis.call('DEL', totalKey)
end
return { added, total, now, oldest }
`

/** Removes the members that start with a prefix; a log holds at most its limit's entries, so reading them all is cheap. */
const RELEASE_BY_PREFIX_SCRIPT = `
local prefix = ARGV[1]
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(member, 1, #prefix) == prefix then redis.call('ZREM', KEYS[1], member) end
end
return 0
`

interface SlidingLogCommands {
  slidingLogHit(key: string, limit: number, windowMs: number, member: string): Promise<[number, number, number, number]>
  slidingLogHitWeighted(key: string, totalKey: string, limit: number, windowMs: number, member: string, weight: number): Promise<[number, number, number, number]>
  slidingLogReleaseByPrefix(key: string, prefix: string): Promise<number>
}

/**
 * Opens a client that fails fast: no offline queue, no retried commands, short connect and
 * command timeouts, so an unreachable server costs requests milliseconds, not seconds.
 */
export function connectRedis(url: string, timeoutMs = 500) {
  const client = createRedis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: timeoutMs * 2,
    commandTimeout: timeoutMs,
    // Concurrent requests share one socket write instead of one write each.
    enableAutoPipelining: true,
    // Keep trying in the background, so a returning server is used again within ~2 seconds.
    retryStrategy: (times) => Math.min(times * 200, 2_000)
  })
  client.defineCommand('slidingLogHit', { numberOfKeys: 1, lua: HIT_SCRIPT })
  client.defineCommand('slidingLogHitWeighted', { numberOfKeys: 2, lua: HIT_WEIGHTED_SCRIPT })
  client.defineCommand('slidingLogReleaseByPrefix', { numberOfKeys: 1, lua: RELEASE_BY_PREFIX_SCRIPT })
  return client
}

export class RedisSlidingLog implements SlidingLogStore {
  constructor(readonly client: Redis, private prefix: string) {}

  /** True while commands can be sent; false while (re)connecting. */
  get ready() {
    return this.client.status === 'ready'
  }

  async hit(key: string, limit: number, windowMs: number, member: string): Promise<LogState> {
    const commands = this.client as unknown as SlidingLogCommands
    const [added, count, now, oldest] = await commands.slidingLogHit(this.prefix + key, limit, windowMs, member)
    return { added: added === 1, count, now, oldest }
  }

  async hitWeighted(key: string, limit: number, windowMs: number, member: string, weight: number): Promise<LogState> {
    const commands = this.client as unknown as SlidingLogCommands
    const log = this.prefix + key
    const [added, count, now, oldest] = await commands.slidingLogHitWeighted(log, `${log}:units`, limit, windowMs, member, weight)
    return { added: added === 1, count, now, oldest }
  }

  async release(key: string, member: string) {
    await this.client.zrem(this.prefix + key, member)
  }

  async releaseByPrefix(key: string, prefix: string) {
    await (this.client as unknown as SlidingLogCommands).slidingLogReleaseByPrefix(this.prefix + key, prefix)
  }

  async close() {
    this.client.disconnect()
  }
}
