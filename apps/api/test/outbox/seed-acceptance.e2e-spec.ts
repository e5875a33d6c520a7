import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { CapabilityStack, credentials, type OperationBody } from '../capabilities/stack';
import { ApiClient } from '../support/api-client';
import { spawnApiProcess } from '../support/api-process';
import { waitUntil } from './processes';

const t = useTestDatabase();

interface Accepted {
  store: { id: string; status: string };
  operation: OperationBody;
}

/**
 * The five acceptance checks of the idempotency-and-outbox seed, through the HTTP API with real
 * platform-sim, api, dispatcher and worker processes (check 5, RLS on the outbox as app_user, is
 * packages/outbox/test/rls.integration-spec.ts; the dispatcher-crash check 4 is
 * crash-proofs.e2e-spec.ts).
 */
describe('seed acceptance: idempotent command + transactional outbox over HTTP', () => {
  const stack = new CapabilityStack(t);
  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  const newStore = (tag: string) => ({
    platform: 'sim',
    storeExternalId: `seed-${tag}-${randomUUID()}`,
    ...credentials(tag),
  });
  const eventsFor = async (storeId: string) =>
    (await t.owner.query(`select status from outbox_events where payload->>'storeId' = $1`, [storeId]))
      .rows as Array<{
      status: string;
    }>;
  const operationsFor = async (storeId: string) =>
    (await t.owner.query(`select count(*)::int as n from operations where resource_id = $1`, [storeId]))
      .rows[0].n as number;
  const storesNamed = async (externalId: string) =>
    (await t.owner.query('select id from stores where store_external_id = $1', [externalId])).rows as Array<{
      id: string;
    }>;

  it('(1) a replayed Idempotency-Key creates no second resource and no second task, and returns the first response', async () => {
    const body = newStore('one');
    const key = randomUUID();
    const before = await stack.admin.counters();
    const first = await stack.client.post<Accepted>(stack.ws('/stores'), body, { key });
    expect(first.status).toBe(202);
    await stack.waitForOperation(first.body.operation.id);
    const again = await stack.client.post<Accepted>(stack.ws('/stores'), body, { key });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await storesNamed(body.storeExternalId)).toHaveLength(1);
    expect(await eventsFor(first.body.store.id)).toEqual([{ status: 'dispatched' }]);
    expect(await operationsFor(first.body.store.id)).toBe(1);
    // One task: the marketplace verified the credentials once, for the first request only.
    expect((await stack.admin.counters()).verifyCalls - before.verifyCalls).toBe(1);
  });

  it('(2) the same key with another body → 409; concurrent identical requests → one execution', async () => {
    const body = newStore('two');
    const key = randomUUID();
    const before = await stack.admin.counters();
    // The first request is held inside its transaction, right after reserving the key, by a second
    // API process; the other 19 arrive at both processes while it holds it, so they are truly
    // concurrent with the execution (in order, they would all simply replay).
    const held = await stack.spawnApi('api-held', {
      TEST_FAULTS: 'idempotency.after-reserve=hold:2000:/stores',
    });
    const heldClient = new ApiClient(held.url, stack.user.accessToken);
    const first = heldClient.post<Accepted>(stack.ws('/stores'), body, { key });
    await held.proc.waitForOutput(/fault:idempotency\.after-reserve:hold/);
    const sentAt = Date.now();
    const timed = await Promise.all(
      Array.from({ length: 19 }, async (_, i) => {
        const answer = await (i % 2 ? heldClient : stack.client).post<Accepted>(stack.ws('/stores'), body, {
          key,
        });
        return { answer, waitedMs: Date.now() - sentAt };
      }),
    );
    const followers = timed.map((f) => f.answer);
    // Every follower waited for the held execution (held 2 s) instead of answering at once.
    for (const f of timed) expect(f.waitedMs).toBeGreaterThanOrEqual(1000);
    const leader = await first;
    expect(held.proc.output().match(/fault:idempotency\.after-reserve/g)).toHaveLength(1);
    const answers = [leader, ...followers];
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([202]));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(leader.headers.get('idempotent-replayed')).toBeNull();
    expect(followers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    const stores = await storesNamed(body.storeExternalId);
    expect(stores).toHaveLength(1);
    expect(await eventsFor(stores[0]!.id)).toHaveLength(1);
    expect(await operationsFor(stores[0]!.id)).toBe(1);
    await stack.waitForOperation(leader.body.operation.id);
    expect((await stack.admin.counters()).verifyCalls - before.verifyCalls).toBe(1);
    await held.proc.stop();

    const other = await stack.client.post(
      stack.ws('/stores'),
      { ...body, storeExternalId: `${body.storeExternalId}-x` },
      { key },
    );
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await storesNamed(`${body.storeExternalId}-x`)).toHaveLength(0);
  });

  it('(3) the API is SIGKILLed right after the business commit; a dispatcher started afterwards delivers the event', async () => {
    await stack.dispatcher.stop(); // no dispatcher while the API commits and dies
    const { proc: doomed, url } = await spawnApiProcess('api-crash', t.info, {
      AUTH_SCRYPT_LOG_N: undefined, // the API's default cost, as this process always had
      PLATFORM_BASE_URL: stack.simUrl,
      OUTBOX_FAULTS_ENABLED: '1',
      OUTBOX_FAULT: 'after-business-commit',
    });
    const body = newStore('three');
    const answer = await new ApiClient(url, stack.user.accessToken)
      .post(stack.ws('/stores'), body, { key: randomUUID() })
      .then(
        (r) => `answered ${r.status}`,
        (e: Error) => e.message,
      );
    expect(await doomed.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(answer).toMatch(/fetch failed/); // the client never got an answer

    // The business rows and the event committed together, and nothing has delivered the event yet.
    const [store] = await storesNamed(body.storeExternalId);
    expect(store).toBeDefined();
    expect(await eventsFor(store!.id)).toEqual([{ status: 'pending' }]);

    stack.startDispatcher();
    await waitUntil(
      'the event to be dispatched',
      async () => (await eventsFor(store!.id))[0]?.status === 'dispatched',
    );
    const ops = await t.owner.query(`select id from operations where resource_id = $1`, [store!.id]);
    await stack.waitForOperation(ops.rows[0].id);
    const verified = await stack.client.get<{ status: string }>(stack.ws(`/stores/${store!.id}`));
    expect(verified.body.status).toBe('active');
  });

  it("the API's post-commit nudge wakes the dispatcher: polling every 10 minutes, a command is still delivered at once", async () => {
    const tenMinutes = { OUTBOX_POLL_INTERVAL_MS: '600000' };
    const command = async (tag: string) =>
      (await stack.client.post<Accepted>(stack.ws('/stores'), newStore(tag), { key: randomUUID() })).body
        .store.id;
    const dispatchedSoon = (storeId: string) =>
      waitUntil(
        'the event to be dispatched',
        async () => (await eventsFor(storeId))[0]?.status === 'dispatched',
        10_000,
      );

    // Each dispatcher below starts with one event waiting: its start-up round delivers it, and once
    // that round is over (a second to spare) only a nudge can move the next event for 10 minutes.
    const startDispatcher = async (env: Record<string, string>) => {
      await stack.stopDispatcher();
      const waiting = await command('waiting');
      stack.startDispatcher(env);
      await dispatchedSoon(waiting);
      await new Promise((r) => setTimeout(r, 1000));
    };

    // The control: the same dispatcher not listening for nudges leaves a new event alone.
    await startDispatcher({ ...tenMinutes, OUTBOX_NUDGE: 'off' });
    const unheard = await command('unheard');
    await new Promise((r) => setTimeout(r, 3000));
    expect(await eventsFor(unheard)).toEqual([{ status: 'pending' }]);

    await startDispatcher(tenMinutes);
    const heard = await command('heard');
    await dispatchedSoon(heard);
    expect(await eventsFor(unheard)).toEqual([{ status: 'dispatched' }]); // by that start-up round

    await stack.restartDispatcher(); // the stack's usual one, for whatever runs next
  });
});
