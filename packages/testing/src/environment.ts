/**
 * How the integration suites find PostgreSQL and Redis.
 *
 *   TEST_DATABASE_URL  a superuser URL whose database name contains "test"
 *                      (e.g. postgres://postgres@127.0.0.1:5432/listing_test)
 *   TEST_REDIS_URL     e.g. redis://127.0.0.1:6379
 *
 *   TEST_POOLER        optional: `pgbouncer` puts Debian's PgBouncer (transaction mode) between
 *                      the application roles and PostgreSQL for the whole run; the owner and
 *                      admin connections (fixtures, migrations) stay direct
 *   TEST_REDIS_CLUSTER optional: `1` starts a Redis Cluster of 3 masters (redis-server on loopback
 *                      ports) for the run; test files and the roles they spawn use it instead of
 *                      TEST_REDIS_URL, with a hash-tagged BullMQ prefix (REDIS_CLUSTER=1)
 *
 * When the first two are unset, jest's globalSetup starts PostgreSQL and Redis with Testcontainers.
 * globalSetup publishes what it prepared through the LISTING_TEST_* variables below; jest
 * workers are forked after globalSetup and inherit them.
 */
export const ENV = {
  databaseUrl: 'TEST_DATABASE_URL',
  redisUrl: 'TEST_REDIS_URL',
  runId: 'LISTING_TEST_RUN_ID',
  template: 'LISTING_TEST_TEMPLATE',
  pooler: 'TEST_POOLER',
  poolerPort: 'LISTING_TEST_POOLER_PORT',
  redisCluster: 'TEST_REDIS_CLUSTER',
  redisClusterUrl: 'LISTING_TEST_REDIS_CLUSTER_URL',
} as const;

export const HOW_TO_PROVIDE = [
  'Integration tests need a real PostgreSQL (15+) and Redis (7+). Provide them in one of two ways:',
  '  1. export TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/listing_test',
  '     export TEST_REDIS_URL=redis://127.0.0.1:6379',
  '     (a superuser URL; the database name must contain "test"; `bash .ci/run` installs and starts both)',
  '  2. run a Docker engine and leave both unset: Testcontainers starts postgres:15 and redis:7.',
].join('\n');

export class TestEnvironmentError extends Error {
  constructor(problem: string, cause?: unknown) {
    const detail = cause instanceof Error ? `\n  cause: ${cause.message}` : '';
    super(`${problem}${detail}\n\n${HOW_TO_PROVIDE}`);
    this.name = 'TestEnvironmentError';
  }
}

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new TestEnvironmentError(
      `${name} is not set: the integration harness's globalSetup did not run for this project`,
    );
  }
  return value;
}

/** Refuses any database whose name lacks "test": the harness drops and creates databases. */
export function assertTestDatabaseName(name: string): void {
  if (!/test/i.test(name)) {
    throw new TestEnvironmentError(
      `refusing to run against database "${name}": its name must contain "test"`,
    );
  }
}
