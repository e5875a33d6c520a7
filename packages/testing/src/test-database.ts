import { randomBytes } from 'node:crypto';
import { AGENT_ROLE, APP_ROLE, Database, OWNER_ROLE, databaseName, withCredentials } from '@listing/db';
import { Client, Pool } from 'pg';
import { viaLocalPort } from './cuttable-proxy';
import { ENV, assertTestDatabaseName, requireEnv } from './environment';

export interface TestDatabase {
  /** Database name, unique to this test file. */
  readonly name: string;
  /** As the application role (RLS applies). */
  readonly appUrl: string;
  /** As the outbox agent (dispatcher, worker, CLI: the application role plus the outbox functions). */
  readonly agentUrl: string;
  /** As the owner role (bypasses RLS): for fixtures and assertions only. */
  readonly ownerUrl: string;
  readonly adminUrl: string;
  /** The run's Redis: TEST_REDIS_URL, or a seed node of the run's cluster (TEST_REDIS_CLUSTER). */
  readonly redisUrl: string;
  /** The same as a target for the project's connection factory (`connectRedis`). */
  readonly redis: { readonly url: string; readonly cluster: boolean };
  /**
   * BullMQ prefix unique to this test file, so files never see each other's queues; hash-tagged
   * (`{test-…}`) on a cluster.
   */
  readonly bullPrefix: string;
  /** True when appUrl and agentUrl go through the run's pooler (TEST_POOLER). */
  readonly pooled: boolean;
  /** What a spawned role's environment adds for this database (the pooler's settings). */
  readonly processEnv: Record<string, string>;
  drop(): Promise<void>;
}

/** Clones this run's migrated template into a fresh database for one test file. */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = requireEnv(ENV.databaseUrl);
  const template = requireEnv(ENV.template);
  const runId = requireEnv(ENV.runId);
  const base = databaseName(adminUrl);
  assertTestDatabaseName(base);
  const suffix = `${process.env.JEST_WORKER_ID ?? '0'}_${randomBytes(3).toString('hex')}`;
  const name = `${base}_${runId}_${suffix}`;
  assertTestDatabaseName(name);

  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    if (options.empty) {
      await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)} OWNER ${OWNER_ROLE}`);
    } else {
      await cloneTemplate(admin, name, template);
    }
  } finally {
    await admin.end();
  }
  const poolerPort = process.env[ENV.poolerPort];
  const clusterUrl = process.env[ENV.redisClusterUrl];
  const redisUrl = clusterUrl ?? requireEnv(ENV.redisUrl);
  const bullPrefix = `test-${runId}-${suffix}`;
  const pooled = (url: string) => (poolerPort ? viaLocalPort(url, poolerPort) : url);
  return {
    name,
    adminUrl,
    appUrl: pooled(withCredentials(adminUrl, APP_ROLE, APP_ROLE, name)),
    agentUrl: pooled(withCredentials(adminUrl, AGENT_ROLE, AGENT_ROLE, name)),
    pooled: poolerPort !== undefined,
    processEnv: {
      ...(poolerPort ? { DATABASE_PREPARED_STATEMENTS: '0' } : {}),
      ...(clusterUrl ? { REDIS_CLUSTER: '1' } : {}),
    },
    ownerUrl: withCredentials(adminUrl, OWNER_ROLE, OWNER_ROLE, name),
    redisUrl,
    redis: { url: redisUrl, cluster: clusterUrl !== undefined },
    bullPrefix: clusterUrl ? `{${bullPrefix}}` : bullPrefix,
    async drop() {
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

async function cloneTemplate(admin: Client, name: string, template: string) {
  // CREATE DATABASE ... TEMPLATE fails while another session is connected to the template;
  // parallel clones can briefly collide, so retry a few times.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.query(
        `CREATE DATABASE ${admin.escapeIdentifier(name)} TEMPLATE ${admin.escapeIdentifier(template)} OWNER ${OWNER_ROLE}`,
      );
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '55006' || attempt >= 20) throw error;
      await new Promise((r) => setTimeout(r, 50 + attempt * 50));
    }
  }
}

export interface TestDatabaseHandle {
  readonly info: TestDatabase;
  /** The application's Database as app_user. */
  readonly db: Database;
  /** The outbox processes' Database as outbox_agent (opened on first use). */
  readonly agentDb: Database;
  /** A pool as the owner role (bypasses RLS) for fixtures and assertions. */
  readonly owner: Pool;
}

/**
 * Registers beforeAll/afterAll that give the calling test file its own database. Access the
 * handle's fields inside tests (they exist once beforeAll ran).
 */
export function useTestDatabase(options: { poolSize?: number } = {}): TestDatabaseHandle {
  let info: TestDatabase | undefined;
  let db: Database | undefined;
  let agentDb: Database | undefined;
  let owner: Pool | undefined;
  beforeAll(async () => {
    info = await createTestDatabase();
    db = new Database({
      connectionString: info.appUrl,
      max: options.poolSize ?? 10,
      applicationName: 'test',
      preparedStatements: !info.pooled,
    });
    owner = new Pool({ connectionString: info.ownerUrl, max: 4 });
    // pool.end() resolves before its idle connections are gone; the DROP ... WITH (FORCE) in
    // afterAll can then terminate one, and an idle client's error must not fail the file.
    owner.on('error', () => undefined);
  });
  afterAll(async () => {
    await db?.close();
    await agentDb?.close();
    agentDb = undefined;
    await owner?.end();
    await info?.drop();
  });
  const need = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useTestDatabase(): used before beforeAll ran');
    return value;
  };
  return {
    get info() {
      return need(info);
    },
    get db() {
      return need(db);
    },
    get agentDb() {
      agentDb ??= new Database({
        connectionString: need(info).agentUrl,
        max: options.poolSize ?? 10,
        applicationName: 'test-agent',
        preparedStatements: !need(info).pooled,
      });
      return agentDb;
    },
    get owner() {
      return need(owner);
    },
  };
}
