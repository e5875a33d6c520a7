import { z } from 'zod';
import { ConfigError } from '../config/app-config';

/**
 * Operability settings of the API process, parsed once at boot next to the main configuration
 * (kept apart so the ops surface can be configured and tested on its own).
 */
/** An empty value (`ADMIN_TOKEN=` from a compose file's `${ADMIN_TOKEN:-}`) means unset. */
const optionalSecret = z.preprocess(
  (value) => (value === '' ? undefined : value),
  z.string().min(16, 'must be at least 16 characters').optional(),
);

const schema = z.object({
  /** Admin secret for /admin/queues (Bearer, or Basic with it as password). Unset: not mounted. */
  ADMIN_TOKEN: optionalSecret,
  /**
   * Secret for the API's /metrics (Bearer, or Basic with it as password). Unset: /metrics is open
   * (development; keep it on the internal network), with a warning at boot in production.
   */
  METRICS_TOKEN: optionalSecret,
  /** SIGTERM → readiness 503 and Connection: close for this long, then the listener closes. */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(120_000).default(3000),
});

export type ApiOpsConfig = z.infer<typeof schema>;

export function loadApiOpsConfig(env: NodeJS.ProcessEnv = process.env): ApiOpsConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return parsed.data;
}
