import { z } from 'zod';
import { preparedStatementsSetting } from './database-config';
import { redisFields, refuseClusterWithoutHashTag } from './redis-config';
import { parseTrustProxy } from './trust-proxy';

// Store credentials at rest (AES-256-GCM): "id:base64-32-bytes,id2:..."; CREDENTIAL_KEY_ID
// encrypts new versions, the others keep decrypting what they encrypted. The dev key is public.
const DEV_CREDENTIAL_KEY = 'dev-1:4dry8Apx9duGMfxxJQr0pybdCzQbT3oTOK89ZtWjXUM=';
const DEV_REFRESH_KEY = 'insecure-development-refresh-derivation-key';
const platformFields = {
  CREDENTIAL_KEYS: z.string().min(1).default(DEV_CREDENTIAL_KEY),
  CREDENTIAL_KEY_ID: z.string().min(1).default('dev-1'),
  // The marketplace and AI vendor (apps/platform-sim in development and tests).
  PLATFORM_BASE_URL: z.url().default('http://127.0.0.1:4010'),
  PLATFORM_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
};

function refusePlatformDevDefaults(
  env: { NODE_ENV: string; CREDENTIAL_KEYS: string },
  ctx: z.RefinementCtx,
): void {
  if (env.NODE_ENV === 'production' && env.CREDENTIAL_KEYS.includes(DEV_CREDENTIAL_KEY.split(':')[1]!)) {
    ctx.addIssue({ code: 'custom', path: ['CREDENTIAL_KEYS'], message: 'set a real key in production' });
  }
}

/** The platform part of the configuration, for processes that do not parse the whole (worker). */
const platformSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    ...platformFields,
  })
  .superRefine(refusePlatformDevDefaults);
export type PlatformConfig = z.infer<typeof platformSchema>;

/**
 * Process configuration, parsed once at boot. A bad environment fails with the list of every
 * offending variable, not the first one.
 */
const schema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    HOST: z.string().default('127.0.0.1'),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    DATABASE_URL: z.url().default('postgres://app_user:app_user@127.0.0.1:5432/listing'),
    DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(20),
    DATABASE_PREPARED_STATEMENTS: preparedStatementsSetting,
    ...redisFields,
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(1_048_576),

    // Authentication. scrypt cost is log2(N); 14 → N = 16384, r = 8: 16 MiB per hash.
    AUTH_SCRYPT_LOG_N: z.coerce.number().int().min(10).max(20).default(14),
    ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).default(900),
    REFRESH_TOKEN_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(3600)
      .default(30 * 24 * 3600),
    /**
     * A refresh presented again this long after its rotation (the client lost the answer) gets
     * the same new pair, while that pair is unused; 0: every reuse revokes the session.
     */
    AUTH_REFRESH_GRACE_SECONDS: z.coerce.number().int().min(0).max(300).default(30),
    /** Derives a rotation's new pair from the old refresh token, so a replay can answer it again. */
    AUTH_REFRESH_KEY: z.string().min(32).default(DEV_REFRESH_KEY),
    RATE_LIMIT_AUTH_PER_MINUTE: z.coerce.number().int().min(1).default(30),
    /** Failed logins per account (email) per minute, whatever the client address: guessing one password. */
    RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_MINUTE: z.coerce.number().int().min(1).default(10),
    /** Which proxies' X-Forwarded-For names the client (client-address.ts); unset: none. */
    TRUST_PROXY: z
      .string()
      .optional()
      .transform((value, ctx) => {
        const parsed = parseTrustProxy(value);
        if (typeof parsed === 'object' && !Array.isArray(parsed)) {
          ctx.addIssue({ code: 'custom', message: parsed.problem });
          return z.NEVER;
        }
        return parsed;
      }),
    RATE_LIMIT_WRITES_PER_MINUTE: z.coerce.number().int().min(1).default(60_000),
    RATE_LIMIT_READS_PER_MINUTE: z.coerce.number().int().min(1).default(120_000),

    // Idempotency. Fingerprint keys: "id:secret,id2:secret2"; the current id signs new records,
    // older ids keep verifying records they signed until those expire.
    IDEMPOTENCY_TTL_HOURS: z.coerce.number().min(24, 'must be at least 24 hours').default(48),
    IDEMPOTENCY_LOCK_TIMEOUT_MS: z.coerce.number().int().min(1).default(5000),
    IDEMPOTENCY_RETRY_AFTER_SECONDS: z.coerce.number().int().min(1).default(1),
    IDEMPOTENCY_REPLAY_CACHE_SIZE: z.coerce.number().int().min(0).default(10_000),
    IDEMPOTENCY_FINGERPRINT_KEYS: z.string().default('dev-1:insecure-development-fingerprint-key'),
    IDEMPOTENCY_FINGERPRINT_KEY_ID: z.string().default('dev-1'),

    // Test-only fault injection (see test-faults.ts); refused unless NODE_ENV=test.
    TEST_FAULTS: z.string().optional(),

    ...platformFields,
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === 'production' && env.IDEMPOTENCY_FINGERPRINT_KEYS.includes('insecure-development')) {
      ctx.addIssue({
        code: 'custom',
        path: ['IDEMPOTENCY_FINGERPRINT_KEYS'],
        message: 'set a real secret in production',
      });
    }
    refusePlatformDevDefaults(env, ctx);
    refuseClusterWithoutHashTag(env, ctx);
    if (env.NODE_ENV === 'production' && env.AUTH_REFRESH_KEY === DEV_REFRESH_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['AUTH_REFRESH_KEY'],
        message: 'set a real secret in production',
      });
    }
    if (env.TEST_FAULTS && env.NODE_ENV !== 'test') {
      ctx.addIssue({
        code: 'custom',
        path: ['TEST_FAULTS'],
        message: 'fault injection is only allowed with NODE_ENV=test',
      });
    }
  });

export type AppConfig = z.infer<typeof schema>;

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return parsed.data;
}

export function loadPlatformConfig(env: NodeJS.ProcessEnv = process.env): PlatformConfig {
  const parsed = platformSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return parsed.data;
}

export const APP_CONFIG = Symbol('APP_CONFIG');
/** The platform part (marketplace and AI vendor, credential keys): every role that calls out. */
export const PLATFORM_CONFIG = Symbol('PLATFORM_CONFIG');
