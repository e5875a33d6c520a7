import { ConfigError } from '../src/config/app-config';
import { loadOutboxConfig, outboxDatabaseUrl } from '../src/config/outbox-config';

describe('loadOutboxConfig', () => {
  it('has working defaults', () => {
    const c = loadOutboxConfig({});
    expect(c).toMatchObject({
      OUTBOX_BATCH_SIZE: 500,
      OUTBOX_LEASE_MS: 30_000,
      OUTBOX_NUDGE: 'redis',
      OUTBOX_NUDGE_GAP_MS: 2, // a worker's handlers write events too
      OUTBOX_TEST_JOBS: '0',
    });
  });

  const problems = (env: NodeJS.ProcessEnv) => {
    try {
      loadOutboxConfig(env);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as ConfigError).problems.join('\n');
    }
    throw new Error('expected a ConfigError');
  };

  it('lists every malformed variable at once', () => {
    const text = problems({
      OUTBOX_BATCH_SIZE: 'lots',
      OUTBOX_NUDGE: 'notify',
      OUTBOX_BACKOFF_JITTER: '2',
      REDIS_URL: 'nope',
    });
    for (const v of ['OUTBOX_BATCH_SIZE', 'OUTBOX_NUDGE', 'OUTBOX_BACKOFF_JITTER', 'REDIS_URL'])
      expect(text).toContain(v);
  });

  it('lists every incoherent or forbidden setting at once', () => {
    const text = problems({
      OUTBOX_LEASE_MS: '120000',
      OUTBOX_JOB_COMPLETED_AGE_S: '60',
      OUTBOX_FAULT: 'after-enqueue',
      OUTBOX_TEST_JOBS: '1',
      OUTBOX_RETENTION_DISPATCHED_MS: '0',
      OUTBOX_RETENTION_INBOX_MS: '59999',
      OUTBOX_JOB_FAILED_AGE_S: '119', // the sweep comes round every 60 s
    });
    for (const v of [
      'OUTBOX_JOB_COMPLETED_AGE_S',
      'OUTBOX_JOB_FAILED_AGE_S',
      'OUTBOX_FAULT',
      'OUTBOX_TEST_JOBS',
      'OUTBOX_RETENTION_DISPATCHED_MS',
      'OUTBOX_RETENTION_INBOX_MS',
    ])
      expect(text).toContain(v);
  });

  it('on a Redis Cluster, refuses a prefix without a hash tag and a database other than 0', () => {
    const text = problems({
      REDIS_CLUSTER: '1',
      BULLMQ_PREFIX: 'bull',
      REDIS_URL: 'redis://10.0.0.1:7000/2',
    });
    expect(text).toMatch(/BULLMQ_PREFIX: .*no hash tag.*"\{bull\}"/);
    expect(text).toMatch(/REDIS_URL: a Redis Cluster has only database 0/);
    expect(loadOutboxConfig({ REDIS_CLUSTER: '1', BULLMQ_PREFIX: '{listing}' })).toMatchObject({
      REDIS_CLUSTER: true,
      BULLMQ_PREFIX: '{listing}',
    });
    expect(loadOutboxConfig({ BULLMQ_PREFIX: 'bull' }).REDIS_CLUSTER).toBe(false);
    // The tag must be non-empty and closed inside the prefix (Redis hashes the first {…} only).
    expect(problems({ REDIS_CLUSTER: '1', BULLMQ_PREFIX: '{}listing' })).toMatch(/BULLMQ_PREFIX/);
    expect(problems({ REDIS_CLUSTER: '1', BULLMQ_PREFIX: 'listing{' })).toMatch(/BULLMQ_PREFIX/);
  });

  it('allows the test switches under NODE_ENV=test only', () => {
    expect(
      loadOutboxConfig({ NODE_ENV: 'test', OUTBOX_TEST_JOBS: '1', OUTBOX_FAULTS_ENABLED: '1' })
        .OUTBOX_TEST_JOBS,
    ).toBe('1');
  });

  it('connects as outbox_agent: derived from DATABASE_URL in development, required in production', () => {
    expect(
      outboxDatabaseUrl(
        loadOutboxConfig({ DATABASE_URL: 'postgres://app_user:s3cret@db.internal:6432/listing' }),
      ),
    ).toBe('postgres://outbox_agent:outbox_agent@db.internal:6432/listing');
    const explicit = 'postgres://outbox_agent:other@db.internal:5432/listing';
    expect(outboxDatabaseUrl(loadOutboxConfig({ OUTBOX_DATABASE_URL: explicit }))).toBe(explicit);
    expect(problems({ NODE_ENV: 'production' })).toContain('OUTBOX_DATABASE_URL');
    expect(
      outboxDatabaseUrl(loadOutboxConfig({ NODE_ENV: 'production', OUTBOX_DATABASE_URL: explicit })),
    ).toBe(explicit);
  });
});
