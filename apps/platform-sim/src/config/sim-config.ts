import { z } from 'zod';

/**
 * Simulator configuration, parsed once at boot. A bad environment fails with the list of every
 * offending variable, not the first one.
 */
const schema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(4010),
  // When set, every /admin route requires `Authorization: Bearer <token>`.
  SIM_ADMIN_TOKEN: z.string().min(8).optional(),
  // Base URL written into AI image results; defaults to the URL the request came in on.
  SIM_PUBLIC_URL: z.url().optional(),
  // SQLite file keeping the state across restarts (relative to the cwd); unset: in memory.
  SIM_STATE_FILE: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type SimConfig = z.infer<typeof schema>;

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadSimConfig(env: NodeJS.ProcessEnv = process.env): SimConfig {
  // An empty variable means "unset" (compose files and shells often export VAR= ).
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return parsed.data;
}
