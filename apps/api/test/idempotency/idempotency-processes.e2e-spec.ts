import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { killAll, waitUntil } from '../outbox/processes';
import { ApiClient, registerUser, type RegisteredUser } from '../support/api-client';
import { spawnApiProcess } from '../support/api-process';

const t = useTestDatabase();

/** Real API processes: a SIGKILL mid-request, and duplicates racing across processes. */
describe('Idempotency-Key across real API processes', () => {
  let alice: RegisteredUser;
  let plainUrl: string;

  const startApiProcess = (name: string, extra: Record<string, string> = {}) =>
    spawnApiProcess(name, t.info, extra);
  const drafts = () => `/v1/workspaces/${alice.workspaceId}/product-drafts`;
  const titled = async (title: string) =>
    (await t.owner.query(`select count(*)::int as n from records where payload->>'title' = $1`, [title]))
      .rows[0].n as number;
  const keyRows = async (key: string) =>
    (
      await t.owner.query('select count(*)::int as n from idempotency_requests where idempotency_key = $1', [
        key,
      ])
    ).rows[0].n as number;

  beforeAll(async () => {
    ({ url: plainUrl } = await startApiProcess('api'));
    alice = await registerUser(plainUrl);
  });
  afterAll(async () => {
    await killAll();
  });

  it('API killed with SIGKILL after the reservation, before commit → the retry executes at once, once', async () => {
    const { proc, url } = await startApiProcess('api-held', {
      TEST_FAULTS: 'idempotency.after-reserve=hold:60000',
    });
    const key = randomUUID();
    const title = `killed ${key}`;
    const doomed = new ApiClient(url, alice.accessToken).post(drafts(), { title }, { key }).then(
      (r) => `answered ${r.status}`,
      (e: Error) => e.message,
    );
    await proc.waitForOutput(/fault:idempotency\.after-reserve:hold/);
    const killed = await proc.stop('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    expect(await doomed).toMatch(/fetch failed/); // the client saw the connection die

    // PostgreSQL rolled the reservation back with the connection: nothing locks the key.
    await waitUntil('the reservation to vanish', async () => (await keyRows(key)) === 0 || undefined, 10_000);
    const retry = await new ApiClient(plainUrl, alice.accessToken).post(drafts(), { title }, { key });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(await titled(title)).toBe(1);
    const replay = await new ApiClient(plainUrl, alice.accessToken).post(drafts(), { title }, { key });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await titled(title)).toBe(1);
  });

  it('a leader holding the key past the wait bound → the follower (another process) gets 409 IN_PROGRESS with Retry-After', async () => {
    const leader = await startApiProcess('api-leader', {
      TEST_FAULTS: 'idempotency.after-reserve=hold:2500',
    });
    const follower = await startApiProcess('api-follower', {
      IDEMPOTENCY_LOCK_TIMEOUT_MS: '400',
      IDEMPOTENCY_RETRY_AFTER_SECONDS: '3',
    });
    try {
      const key = randomUUID();
      const title = `held ${key}`;
      const first = new ApiClient(leader.url, alice.accessToken).post(drafts(), { title }, { key });
      await leader.proc.waitForOutput(/fault:idempotency\.after-reserve:hold/);
      const busy = await new ApiClient(follower.url, alice.accessToken).post(drafts(), { title }, { key });
      expect(busy.status).toBe(409);
      expect(busy.body).toMatchObject({ code: 'IDEMPOTENCY_REQUEST_IN_PROGRESS', retryable: true });
      expect(busy.headers.get('retry-after')).toBe('3');
      const done = await first;
      expect(done.status).toBe(201);
      const later = await new ApiClient(follower.url, alice.accessToken).post(drafts(), { title }, { key });
      expect(later.status).toBe(201);
      expect(later.headers.get('idempotent-replayed')).toBe('true');
      expect(later.text).toBe(done.text);
      expect(await titled(title)).toBe(1);
    } finally {
      await leader.proc.stop();
      await follower.proc.stop();
    }
  });

  it('a leader that rolls back → the waiting follower (another process) executes', async () => {
    const leader = await startApiProcess('api-failing', {
      TEST_FAULTS: 'idempotency.after-reserve=fail:1500',
    });
    try {
      const key = randomUUID();
      const title = `rolled back ${key}`;
      const first = new ApiClient(leader.url, alice.accessToken).post(drafts(), { title }, { key });
      await leader.proc.waitForOutput(/fault:idempotency\.after-reserve:fail/);
      const second = new ApiClient(plainUrl, alice.accessToken).post(drafts(), { title }, { key });
      const [a, b] = await Promise.all([first, second]);
      expect(a.status).toBe(500);
      expect(a.body).toMatchObject({ code: 'INTERNAL_ERROR' });
      expect(a.text).not.toContain('injected'); // internals never leak
      expect(b.status).toBe(201);
      expect(b.headers.get('idempotent-replayed')).toBeNull();
      expect(await titled(title)).toBe(1);
    } finally {
      await leader.proc.stop();
    }
  });
});
