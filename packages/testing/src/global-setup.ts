import { randomBytes } from 'node:crypto';
import {
  AGENT_ROLE,
  APP_ROLE,
  OWNER_ROLE,
  MIGRATIONS_DIR,
  databaseName,
  dropAgentAppMembership,
  ensureRoles,
  migrate,
  withCredentials,
} from '@listing/db';
import { Redis } from 'ioredis';
import { startPgBouncer, type RunningPgBouncer } from './pgbouncer';
import { startRedisCluster, type RunningRedisCluster } from './redis-cluster';
import { Client } from 'pg';
import { ENV, TestEnvironmentError, assertTestDatabaseName } from './environment';

type Stoppable = { stop(): Promise<unknown> };
const containers: Stoppable[] = ((globalThis as { __listingContainers?: Stoppable[] }).__listingContainers ??=
  []);

/**
 * jest globalSetup (integration and e2e projects): find or start PostgreSQL and Redis, create the
 * roles, migrate a template database once for this run. Each test file then clones the template
 * (see createTestDatabase). Runs once per jest process even when several projects name it.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env[ENV.template]) return;
  if (!process.env[ENV.databaseUrl] || !process.env[ENV.redisUrl]) await startContainers();

  const adminUrl = process.env[ENV.databaseUrl]!;
  const baseName = databaseName(adminUrl);
  assertTestDatabaseName(baseName);
  const runId = randomBytes(4).toString('hex');
  const template = `${baseName}_tpl_${runId}`;

  const admin = await connectAdmin(adminUrl);
  try {
    const { rows } = await admin.query<{ rolsuper: boolean }>(
      'select rolsuper from pg_roles where rolname = current_user',
    );
    if (!rows[0]?.rolsuper) {
      throw new TestEnvironmentError(
        'TEST_DATABASE_URL must name a superuser: the harness creates roles and databases',
      );
    }
    await ensureRoles(admin, { owner: OWNER_ROLE, app: APP_ROLE, agent: AGENT_ROLE });
    await admin.query(`CREATE DATABASE ${template} OWNER ${OWNER_ROLE}`);
  } finally {
    await admin.end();
  }
  await migrate({
    connectionString: withCredentials(adminUrl, OWNER_ROLE, OWNER_ROLE, template),
    directory: MIGRATIONS_DIR,
  });
  const after = await connectAdmin(adminUrl);
  try {
    await dropAgentAppMembership(after);
  } finally {
    await after.end();
  }
  await pingRedis(process.env[ENV.redisUrl]!);
  const poolerKind = process.env[ENV.pooler];
  if (poolerKind) await startPooler(adminUrl, poolerKind);
  if (process.env[ENV.redisCluster] === '1') {
    cluster = await startRedisCluster({ masters: 3 }).catch((error: Error) => {
      throw new TestEnvironmentError(
        'TEST_REDIS_CLUSTER=1: redis-server and redis-cli must be installed',
        error,
      );
    });
    process.env[ENV.redisClusterUrl] = cluster.url;
  }

  process.env[ENV.runId] = runId;
  process.env[ENV.template] = template;
}

async function connectAdmin(url: string): Promise<Client> {
  const tryConnect = async (connectionString: string) => {
    const client = new Client({ connectionString, connectionTimeoutMillis: 5000 });
    await client.connect();
    return client;
  };
  try {
    return await tryConnect(url);
  } catch (error) {
    // The named database may simply not exist yet: create it from the maintenance database.
    if ((error as { code?: string }).code !== '3D000') {
      throw new TestEnvironmentError(`cannot connect to PostgreSQL at TEST_DATABASE_URL`, error);
    }
    const maintenance = await tryConnect(withDatabase(url, 'postgres'));
    await maintenance
      .query(`CREATE DATABASE ${maintenance.escapeIdentifier(databaseName(url))}`)
      .catch(() => undefined);
    await maintenance.end();
    return tryConnect(url);
  }
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function pingRedis(url: string): Promise<void> {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 3000,
    retryStrategy: () => null,
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new TestEnvironmentError(`cannot reach Redis at TEST_REDIS_URL (${url})`, error);
  } finally {
    redis.disconnect();
  }
}

async function startContainers(): Promise<void> {
  try {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const { RedisContainer } = await import('@testcontainers/redis');
    const pg = await new PostgreSqlContainer('postgres:15-alpine')
      .withUsername('postgres')
      .withPassword('postgres')
      .withDatabase('listing_test')
      .start();
    containers.push(pg);
    const redis = await new RedisContainer('redis:7-alpine').start();
    containers.push(redis);
    process.env[ENV.databaseUrl] = pg.getConnectionUri();
    process.env[ENV.redisUrl] = redis.getConnectionUrl();
  } catch (error) {
    throw new TestEnvironmentError(
      'TEST_DATABASE_URL / TEST_REDIS_URL are not set and Testcontainers could not start containers',
      error,
    );
  }
}

export async function stopContainers(): Promise<void> {
  while (containers.length) await containers.pop()!.stop();
  await pooler?.stop();
  pooler = undefined;
  await cluster?.stop();
  cluster = undefined;
  delete process.env[ENV.redisClusterUrl];
}

let pooler: RunningPgBouncer | undefined;
/** TEST_REDIS_CLUSTER=1: the run's cluster (no persistence: stopping it deletes the run's keys). */
let cluster: RunningRedisCluster | undefined;

/** TEST_POOLER=pgbouncer: one PgBouncer for the run; test databases route app roles through it. */
async function startPooler(adminUrl: string, kind: string): Promise<void> {
  if (kind !== 'pgbouncer') throw new TestEnvironmentError(`TEST_POOLER=${kind}: only pgbouncer is known`);
  // Transaction mode with few server connections per (database, role): transactions share them.
  pooler = await startPgBouncer({ serverUrl: adminUrl, poolSize: 8 });
  process.env[ENV.poolerPort] = String(pooler.port);
}
