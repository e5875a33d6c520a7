import { databaseName } from '@listing/db';
import { Client } from 'pg';
import { ENV } from './environment';
import { stopContainers } from './global-setup';

/** Drops this run's template and any per-file database a crashed file left behind. */
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
  await stopContainers();
}
