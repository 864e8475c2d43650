import { ERROR as KNEX_ORIGINAL_ERROR } from '@feathersjs/knex'

// SQLSTATEs of a session the server ended or would not start: class 08 (connection exception),
// 57P01 (terminated by an administrator: pg_terminate_backend, a failover), 57P02 (a crash),
// 57P03 (starting up or shutting down), 57P05 (idle-session timeout).
const LOST_SESSION = /^(08[0-9A-Z]{3}|57P0[1235])$/

// Socket errors of a connection that broke, or of a server that cannot be reached (whichever
// connection it was: one to object storage that breaks is as passing as the database's).
const BROKEN_SOCKET = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'])

// What pg says, without a code, of a client whose connection has gone (knex puts the SQL before it).
const LOST_CLIENT = /Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect/

const losesConnection = (error: any) =>
  (typeof error?.code === 'string' && (LOST_SESSION.test(error.code) || BROKEN_SOCKET.has(error.code))) ||
  (typeof error?.message === 'string' && LOST_CLIENT.test(error.message))

/**
 * Whether an error means the statement's connection was lost (the server ended the session, the
 * socket broke) rather than anything about the statement; also behind the adapter's error
 * (@feathersjs/knex keeps the original under its symbol).
 */
export const isConnectionLoss = (error: unknown): boolean =>
  losesConnection(error) || losesConnection((error as any)?.[KNEX_ORIGINAL_ERROR])

// Citus: a statement planned against a shard that a split or a move (isolate_tenant_to_new_shard,
// a rebalance) replaced while it was sent. The statement did not run; sent again, it finds the new one.
const SHARD_MOVED = /could not find valid entry for shard/

/** Whether an error means the statement met a shard being replaced (Citus), rather than anything about the statement. */
export const isShardMoved = (error: unknown): boolean =>
  [error, (error as any)?.[KNEX_ORIGINAL_ERROR]].some((candidate) => typeof (candidate as any)?.message === 'string' && SHARD_MOVED.test((candidate as any).message))
