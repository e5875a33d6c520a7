import type { TestDatabase } from '@listing/testing';
import { freePort, spawnNode, type Spawned } from '../outbox/processes';

/**
 * The API's environment against one test database: cheap KDF, silent logs, an ephemeral port.
 * `overrides` win; an override of `undefined` leaves that variable unset (the API's default).
 */
export function apiEnv(
  db: TestDatabase,
  overrides: Record<string, string | undefined> = {},
): Record<string, string> {
  const env: Record<string, string | undefined> = {
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: db.appUrl,
    REDIS_URL: db.redisUrl,
    BULLMQ_PREFIX: db.bullPrefix,
    LOG_LEVEL: 'silent',
    AUTH_SCRYPT_LOG_N: '10',
    ...db.processEnv,
    ...overrides,
  };
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

export const API_MAIN = 'dist/main.js';

/**
 * Spawns the API (dist/main.js) on a free port with `apiEnv` (logs at info: readiness is read
 * from them) and waits until it prints that it listens.
 */
export async function spawnApiProcess(
  name: string,
  db: TestDatabase,
  overrides: Record<string, string | undefined> = {},
): Promise<{ url: string; proc: Spawned }> {
  const port = await freePort();
  const proc = spawnNode(name, API_MAIN, apiEnv(db, { LOG_LEVEL: 'info', PORT: String(port), ...overrides }));
  await proc.waitForOutput(/api listening/);
  return { url: `http://127.0.0.1:${port}`, proc };
}
