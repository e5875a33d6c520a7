import { ConfigError, loadConfig } from '../src/config/app-config';
import { loadApiOpsConfig } from '../src/ops/ops-config';

describe('loadConfig', () => {
  it('applies defaults for a bare environment', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(3000);
    expect(config.DATABASE_URL).toMatch(/^postgres:\/\/app_user/);
  });

  it('DATABASE_PREPARED_STATEMENTS: on by default, 0 behind a transaction pooler, nothing else', () => {
    expect(loadConfig({}).DATABASE_PREPARED_STATEMENTS).toBe(true);
    expect(loadConfig({ DATABASE_PREPARED_STATEMENTS: '0' }).DATABASE_PREPARED_STATEMENTS).toBe(false);
    expect(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: 'off' })).toThrow(/DATABASE_PREPARED_STATEMENTS/);
  });

  it('REDIS_CLUSTER=1: the API refuses a BULLMQ_PREFIX without a hash tag (its nudges and limits share it)', () => {
    expect(() => loadConfig({ REDIS_CLUSTER: '1' })).toThrow(/BULLMQ_PREFIX: .*no hash tag/);
    expect(loadConfig({ REDIS_CLUSTER: '1', BULLMQ_PREFIX: 'prod-{listing}' }).REDIS_CLUSTER).toBe(true);
  });

  it('OUTBOX_NUDGE_GAP_MS: 2 ms by default, 0 for one nudge per commit, whole milliseconds up to 1 s', () => {
    expect(loadConfig({}).OUTBOX_NUDGE_GAP_MS).toBe(2);
    expect(loadConfig({ OUTBOX_NUDGE_GAP_MS: '0' }).OUTBOX_NUDGE_GAP_MS).toBe(0);
    for (const bad of ['-1', '2.5', '1001', 'soon'])
      expect(() => loadConfig({ OUTBOX_NUDGE_GAP_MS: bad })).toThrow(/OUTBOX_NUDGE_GAP_MS/);
  });

  it('reports every bad variable at once', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'not a url', LOG_LEVEL: 'loud', TRUST_PROXY: 'true' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    expect(problems).toMatch(/PORT/);
    expect(problems).toMatch(/DATABASE_URL/);
    expect(problems).toMatch(/LOG_LEVEL/);
    expect(problems).toMatch(/TRUST_PROXY: not an address, CIDR block or hop count: true/);
  });

  it('TRUST_PROXY: nobody by default, else a hop count or a list of proxies', () => {
    expect(loadConfig({}).TRUST_PROXY).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '1' }).TRUST_PROXY).toBe(1);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8,loopback' }).TRUST_PROXY).toEqual([
      '10.0.0.0/8',
      'loopback',
    ]);
  });

  it('refuses the development refresh key in production, and a key shorter than 32 characters', () => {
    const production = {
      NODE_ENV: 'production',
      IDEMPOTENCY_FINGERPRINT_KEYS: 'k1:a-real-secret-of-some-length',
      IDEMPOTENCY_FINGERPRINT_KEY_ID: 'k1',
      CREDENTIAL_KEYS: 'k1:QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=',
      CREDENTIAL_KEY_ID: 'k1',
    };
    expect(() => loadConfig(production)).toThrow(/AUTH_REFRESH_KEY: set a real secret in production/);
    expect(loadConfig({ ...production, AUTH_REFRESH_KEY: 'x'.repeat(32) }).AUTH_REFRESH_KEY).toBe(
      'x'.repeat(32),
    );
    expect(() => loadConfig({ AUTH_REFRESH_KEY: 'short' })).toThrow(/AUTH_REFRESH_KEY/);
    expect(loadConfig({}).AUTH_REFRESH_GRACE_SECONDS).toBe(30);
  });
});

describe('loadApiOpsConfig', () => {
  it('reads an empty secret as unset (a compose file passes `${ADMIN_TOKEN:-}`), a short one as an error', () => {
    expect(loadApiOpsConfig({ ADMIN_TOKEN: '', METRICS_TOKEN: '' })).toMatchObject({
      ADMIN_TOKEN: undefined,
      METRICS_TOKEN: undefined,
    });
    expect(() => loadApiOpsConfig({ ADMIN_TOKEN: 'short' })).toThrow(/ADMIN_TOKEN: must be at least 16/);
    expect(loadApiOpsConfig({ ADMIN_TOKEN: 'x'.repeat(16) }).ADMIN_TOKEN).toBe('x'.repeat(16));
  });
});
