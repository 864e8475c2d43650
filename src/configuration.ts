import { StringEnum, Type, defaultAppConfiguration } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, getValidator } from './validators.js'

export const configurationSchema = Type.Intersect([
  defaultAppConfiguration,
  Type.Object({
    host: Type.String(),
    /** Behind a load balancer: take the client address from X-Forwarded-For (per-address limits). */
    trustProxy: Type.Boolean(),
    port: Type.Integer({ minimum: 0, maximum: 65535 }),
    public: Type.String(),
    publicUrl: Type.String(),
    appUrl: Type.String(),
    logLevel: StringEnum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    /** 'json' (one JSON object per line), 'pretty' (pino-pretty), or 'auto': pretty when stdout is a terminal, else json. */
    logFormat: StringEnum(['auto', 'json', 'pretty']),
    dataDir: Type.String(),
    databaseUrl: Type.String(),
    databasePoolSize: Type.Number(),
    /**
     * On a Citus coordinator, what a request's statement that touches more than one shard does
     * (citus.multi_task_query_log_level): 'off', logged at a level, or 'error' (refused, as the
     * Citus tests run). The background work's connections keep Citus's default.
     */
    citusMultiShardLevel: StringEnum(['off', 'debug', 'log', 'notice', 'warning', 'error']),
    /** Seconds a SIGTERM or SIGINT gives the requests in flight before the process exits anyway (index.ts). */
    shutdownTimeoutS: Type.Number({ exclusiveMinimum: 0 }),
    /** Processes serving the port (node's cluster module); read by the launcher (src/index.ts) before any application exists. */
    webConcurrency: Type.Integer({ minimum: 1, maximum: 64 }),
    redisUrl: Type.String(),
    /** Rate limiting (docs/rate-limiting.md): API-key requests per organization per sliding window. */
    rateLimitEnabled: Type.Boolean(),
    rateLimitPoints: Type.Integer({ minimum: 1 }),
    rateLimitWindowS: Type.Integer({ minimum: 1 }),
    /** Prefix of the limiter's Redis keys: distinct per deployment sharing one Redis. */
    rateLimitPrefix: Type.String(),
    /** Records written by batch requests (creates, upserts, updates, deletes) per organization per hour. */
    batchRecordsPerHour: Type.Integer({ minimum: 1 }),
    eventsChannel: Type.String(),
    /** Failed logins per e-mail and per client address per window. */
    loginRateLimitPoints: Type.Integer({ minimum: 1 }),
    loginRateLimitIpPoints: Type.Integer({ minimum: 1 }),
    loginRateLimitWindowS: Type.Integer({ minimum: 1 }),
    /** Requests per client address per window on the public booking routes (no credentials there). */
    publicRateLimitPoints: Type.Integer({ minimum: 1 }),
    publicRateLimitWindowS: Type.Integer({ minimum: 1 }),
    /** Seconds a web-chat visitor's session may go unused before it expires (docs/channels.md). */
    webchatSessionIdleS: Type.Integer({ minimum: 1 }),
    /** Nominatim-compatible search URL resolving activity locations; empty turns geocoding off. */
    geocoderUrl: Type.Optional(Type.String()),
    signupEnabled: Type.Boolean(),
    /** File storage: S3 (or any S3-compatible store) when s3.bucket is set, local disk under dataDir otherwise. */
    s3: Type.Object({
      bucket: Type.String(),
      region: Type.String(),
      endpoint: Type.String(),
      accessKeyId: Type.String(),
      secretAccessKey: Type.String(),
      forcePathStyle: Type.Boolean(),
      publicUrl: Type.String()
    }),
    uploadMaxBytes: Type.Integer({ minimum: 1 }),
    importMaxBytes: Type.Integer({ minimum: 1 }),
    /** Comma-separated media types accepted for product media. */
    mediaTypes: Type.String(),
    mediaPurgeGraceS: Type.Number({ minimum: 0 }),
    mediaPurgeIntervalS: Type.Number({ minimum: 0 }),
    storageUrlTtlS: Type.Integer({ minimum: 1 }),
    /** Days a new organization keeps soft-deleted records before the purge removes them; 0 keeps them (docs/privacy.md). */
    deletedRetentionDays: Type.Integer({ minimum: 0, maximum: 3650 }),
    /** How often each instance writes the retention purges that are due (0 = never). */
    purgeIntervalS: Type.Number({ minimum: 0 }),
    /** The MCP server offers the erasure tool (irreversible) besides the export. */
    mcpAllowErase: Type.Boolean(),
    /** `npm run mcp` only: the API key its tools act as, and optionally the AI assistant whose tools it offers. */
    mcpApiKey: Type.String(),
    mcpAssistantId: Type.String(),
    smtpUrl: Type.String(),
    mailFrom: Type.String(),
    mailMaxAttempts: Type.Integer({ minimum: 1 }),
    mailRetryBaseMs: Type.Number({ minimum: 0 }),
    /** Channel integrations (docs/channels.md): provider base URLs, delivery retries, the credentials key. */
    metaGraphUrl: Type.String(),
    twilioApiUrl: Type.String(),
    messageRetryBaseMs: Type.Number({ minimum: 0 }),
    messageMaxAttempts: Type.Integer({ minimum: 1 }),
    /** How often the outbox worker looks for due jobs of every topic; 0 = only right after the commits that write them. */
    outboxPollIntervalMs: Type.Number({ minimum: 0 }),
    /** Seconds a claimed outbox job stays its worker's without a heartbeat (src/outbox/worker.ts). */
    outboxLeaseS: Type.Number({ minimum: 1 }),
    /** Jobs of one topic a worker runs at once, and how many of them one organization's may be (src/outbox/slots.ts). */
    outboxConcurrency: Type.Integer({ minimum: 1 }),
    outboxConcurrencyPerOrganization: Type.Integer({ minimum: 1 }),
    /** 32 bytes, base64; empty: derived from AUTH_SECRET (HKDF). */
    channelSecretsKey: Type.String(),
    /** Warn at start-up when channelSecretsKey is empty (config/production.json turns it on). */
    channelSecretsKeyWarning: Type.Boolean(),
    inviteTtlSeconds: Type.Number({ minimum: 1 }),
    inviteLinkPath: Type.String(),
    /** E-mail verification links (sign-up, e-mail change): lifetime and path appended to appUrl. */
    emailVerificationTtlSeconds: Type.Number({ minimum: 1 }),
    emailVerificationLinkPath: Type.String(),
    passwordResetTtlSeconds: Type.Number({ minimum: 1 }),
    passwordResetLinkPath: Type.String(),
    /** How long a stored Idempotency-Key answer is replayed (docs/integrations.md). */
    idempotencyTtlS: Type.Integer({ minimum: 1 }),
    /** Outbound webhooks (docs/integrations.md): backoff, attempts, time limit per attempt. */
    webhookRetryBaseMs: Type.Number({ minimum: 0 }),
    webhookMaxAttempts: Type.Integer({ minimum: 1 }),
    webhookTimeoutMs: Type.Integer({ minimum: 1 }),
    /** Live subscriptions an organization may have. */
    webhookMaxSubscriptions: Type.Integer({ minimum: 1 }),
    /** Lets deliveries reach loopback, link-local and private addresses (tests, private networks). */
    webhookAllowPrivate: Type.Boolean(),
    /** Subscriptions must post to https:// URLs (config/production.json turns it on). */
    webhookRequireHttps: Type.Boolean()
  })
])

export type ApplicationConfiguration = Static<typeof configurationSchema>

export const configurationValidator = getValidator(configurationSchema, dataValidator)
