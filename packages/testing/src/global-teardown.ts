import { databaseName } from '@listing/db';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { ENV } from './environment';
import { stopContainers } from './global-setup';

/**
 * Drops this run's template and any per-file database a crashed file left behind, and deletes
 * this run's BullMQ keys (every file's prefix is `test-<runId>-…`), so repeated runs on a
 * developer's Redis do not pile up jobs.
 */
export default async function globalTeardown(): Promise<void> {
  const runId = process.env[ENV.runId];
  const adminUrl = process.env[ENV.databaseUrl];
  if (!runId || !adminUrl) return;
  delete process.env[ENV.runId];
  delete process.env[ENV.template];
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const base = databaseName(adminUrl);
    const { rows } = await admin.query<{ datname: string }>(
      `select datname from pg_database where datname like $1`,
      [`${base}_%${runId}%`],
    );
    for (const { datname } of rows) {
      await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(datname)} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
  await deleteRunKeys(process.env[ENV.redisUrl], runId);
  await stopContainers();
}

async function deleteRunKeys(redisUrl: string | undefined, runId: string): Promise<void> {
  if (!redisUrl) return;
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    for await (const keys of redis.scanStream({ match: `test-${runId}-*`, count: 1000 })) {
      if ((keys as string[]).length) await redis.unlink(...(keys as string[]));
    }
  } catch {
    // best effort: a Redis that is gone (a test stopped it) has nothing left to clean
  } finally {
    redis.disconnect();
  }
}
