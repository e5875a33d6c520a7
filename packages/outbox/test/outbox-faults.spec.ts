import { OutboxFaults } from '../src';

describe('OutboxFaults (test-only hooks)', () => {
  it('is inert when nothing is asked for', () => {
    const faults = OutboxFaults.fromEnv({ NODE_ENV: 'production' });
    expect(faults.active).toBe(false);
    expect(() => faults.afterBusinessCommit()).not.toThrow();
    expect(() => faults.afterEnqueue()).not.toThrow();
  });

  it.each([
    { NODE_ENV: 'production', OUTBOX_FAULTS_ENABLED: '1', OUTBOX_FAULT: 'after-enqueue' },
    { NODE_ENV: 'development', OUTBOX_FAULTS_ENABLED: '1', OUTBOX_FAULT: 'after-enqueue' },
    { NODE_ENV: 'test', OUTBOX_FAULT: 'after-enqueue' },
    { NODE_ENV: 'test', OUTBOX_FAULTS_ENABLED: 'true', OUTBOX_FAULT: 'after-business-commit' },
    { NODE_ENV: 'production', OUTBOX_TRACE_FILE: '/tmp/x' },
  ])('refuses to activate in %o', (env) => {
    expect(() => OutboxFaults.fromEnv(env)).toThrow(
      expect.objectContaining({ code: 'OUTBOX_FAULTS_REFUSED' }),
    );
  });

  it('refuses unknown fault points and arms known ones in a test environment', () => {
    expect(() =>
      OutboxFaults.fromEnv({ NODE_ENV: 'test', OUTBOX_FAULTS_ENABLED: '1', OUTBOX_FAULT: 'nope' }),
    ).toThrow(/unknown fault/);
    const faults = OutboxFaults.fromEnv({
      NODE_ENV: 'test',
      OUTBOX_FAULTS_ENABLED: '1',
      OUTBOX_FAULT: 'after-enqueue',
    });
    expect(faults.isArmed('after-enqueue')).toBe(true);
    expect(faults.isArmed('after-business-commit')).toBe(false);
    expect(() => faults.afterBusinessCommit()).not.toThrow();
  });
});
