import type { HookContext as FeathersHookContext, NextFunction } from '@feathersjs/feathers'
import type { Application as FeathersApplication } from '@feathersjs/koa'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { ApplicationConfiguration } from './configuration.js'

export type { NextFunction }

export type Role = 'owner' | 'admin' | 'member'

/** Who is calling, resolved once per request by authentication. */
export interface Caller {
  userId: number
  /** Set when the request carries an API key: the caller is confined to this organization. */
  apiKeyOrganizationId?: number
  apiKeyId?: number
  /** The key's scopes lack 'write': only reads (find, get, search) are allowed. */
  apiKeyReadOnly?: boolean
  /** organization id -> role, for every organization the caller may act in. */
  roles: Map<number, Role>
}

export interface Configuration extends ApplicationConfiguration {
  knex: Knex
  /** The background work's knex (the outbox worker, the sweeps), on the same database: src/db.ts. */
  backgroundKnex: Knex
  logger: Logger
  /** Set when shutdown begins (index.ts): answers close their connections from then on. */
  draining?: boolean
  /** Set once app.setup() has finished: GET /health answers 503 until then. */
  ready?: boolean
}

// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ServiceTypes {}

export type Application = FeathersApplication<ServiceTypes, Configuration>

export type HookContext<S = any> = FeathersHookContext<Application, S>

declare module '@feathersjs/feathers' {
  interface Params {
    caller?: Caller
    /** A call made by the service itself on purpose, outside any tenant (workers, seeds). */
    system?: boolean
    user?: { id: number; email: string; first_name?: string | null; last_name?: string | null }
    apiKey?: { id: number; organization_id: number; user_id: number }
    /** The record a patch or remove is about to change, loaded by the shared hooks. */
    before?: Record<string, any>
    /** The id of the HTTP request the call serves (X-Request-Id): lines logged for it carry it as req_id (requestLog). */
    requestId?: string
  }
}
