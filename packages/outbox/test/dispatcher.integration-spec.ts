import { Queue } from 'bullmq';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import {
  backoffBounds,
  OutboxDispatcher,
  QueueProducer,
  type BatchReport,
  type BackoffPolicy,
  type ClaimedEvent,
  type RedisClient,
} from '../src';
import { connectedRedis, insertEvents, statusCounts, waitFor } from './helpers';

const t = useTestDatabase();

/**
 * A real producer whose adds fail for one queue name (Redis itself stays healthy). Records the
 * workspaces of each accepted add, in order: the order events reached BullMQ (marks, and with
 * them the batch reports, may come later).
 */
class BrokenQueueProducer extends QueueProducer {
  readonly adds: string[][] = [];
  /** The workspaces of every addBulk call, accepted or not, in call order. */
  readonly bulks: string[][] = [];
  /** Per queue: an addBulk to it waits here after its jobs are in BullMQ (see holdAfterAdd). */
  private readonly holds = new Map<string, { added: () => void; released: Promise<void> }>();

  /**
   * The next addBulk to `queue` puts its jobs in BullMQ, then does not return until `release()`:
   * the dispatcher holds those leases, its marks not yet written. `added` resolves once the jobs
   * are in.
   */
  holdAfterAdd(queue: string): { added: Promise<void>; release: () => void } {
    let added!: () => void;
    let release!: () => void;
    const addedPromise = new Promise<void>((r) => (added = r));
    const released = new Promise<void>((r) => (release = r));
    this.holds.set(queue, { added, released });
    return { added: addedPromise, release };
  }

  override async addBulk(queue: string, events: readonly ClaimedEvent[]): Promise<void> {
    this.bulks.push([...new Set(events.map((e) => e.workspaceId))]);
    await refuse(queue);
    if (events.some((e) => e.type === 'poison.event')) {
      // a pipeline: the others are added, the poisoned one fails the call
      for (const e of events) if (e.type !== 'poison.event') await this.add(queue, e);
      throw new Error('job rejected: poison');
    }
    await super.addBulk(queue, events);
    this.adds.push([...new Set(events.map((e) => e.workspaceId))]);
    const hold = this.holds.get(queue);
    if (hold) {
      this.holds.delete(queue);
      hold.added();
      await hold.released;
    }
  }
  override async add(queue: string, event: ClaimedEvent): Promise<void> {
    await refuse(queue);
    if (event.type === 'poison.event') throw new Error('job rejected: poison');
    await super.add(queue, event);
    this.adds.push([event.workspaceId]);
  }
}

async function refuse(queue: string): Promise<void> {
  if (queue === 'q-slow') await new Promise((r) => setTimeout(r, 300));
  if (queue === 'q-broken') {
    throw new Error('job rejected: see https://bucket.example/obj?X-Amz-Signature=abc123 password=hunter2');
  }
  // What a Redis at maxmemory under noeviction answers every write while PING still works.
  if (queue === 'q-oom') throw new Error("OOM command not allowed when used memory > 'maxmemory'.");
}

/**
 * The test database for a dispatcher whose second claim (a statement calling outbox_claim_due)
 * waits until `until()` holds: a claim still in flight while another lane's add is refused.
 */
function holdSecondClaim(until: () => boolean): typeof t.agentDb {
  const db = t.agentDb;
  let claims = 0;
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'queryInWorkspaces') {
        return async (...args: Parameters<typeof db.queryInWorkspaces>) => {
          if (args[0].some((p) => p.statement.includes('outbox_claim_due')) && ++claims === 2) {
            await waitFor('the first lane to pause and release', async () => until(), 5000, 2);
          }
          return db.queryInWorkspaces(...args);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A promise to resolve from outside (Promise.withResolvers is Node 22+). */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('OutboxDispatcher (in process, real PostgreSQL and Redis)', () => {
  let redis: RedisClient;
  let producer: BrokenQueueProducer;

  beforeAll(async () => {
    redis = await connectedRedis(t.info.redis);
    producer = new BrokenQueueProducer(redis, t.info.bullPrefix);
  });
  afterAll(async () => {
    await producer.close();
    await redis.quit();
  });
  beforeEach(async () => {
    await t.owner.query('delete from outbox_events');
    producer.adds.length = 0;
    producer.bulks.length = 0;
  });
  /** Index of the first add that carried `workspaceId`'s events. */
  const firstAdd = (workspaceId: string) => producer.adds.findIndex((ws) => ws.includes(workspaceId));

  /**
   * Starts `d` and returns once its start-up round is over and its loop sleeps for the poll
   * interval (make it long; a full batch would start another round at once, so the start-up
   * round must find less than a batch). Returns a reader of the rounds run so far.
   */
  async function startAndLetSleep(d: OutboxDispatcher): Promise<() => number> {
    d.start();
    await waitFor('the loop to go to sleep', async () => d.stats.idleSleeps > 0, 20_000, 5);
    return () => d.stats.idleSleeps;
  }

  const dispatcher = (extra: Partial<ConstructorParameters<typeof OutboxDispatcher>[0]> = {}) =>
    new OutboxDispatcher({ db: t.agentDb, producer, batchSize: 100, concurrency: 2, ...extra });

  it('enqueues every due event with jobId = event id into its queue and marks it dispatched', async () => {
    const ws = await seedWorkspace(t.owner);
    const ids = await insertEvents(t.owner, ws.workspaceId, 250, { queue: 'q-basic', type: 'basic.event' });
    const d = dispatcher();
    expect(await d.drain()).toBe(250);
    expect(await statusCounts(t.owner)).toEqual({ dispatched: 250 });
    const queue = new Queue('q-basic', { connection: redis, prefix: t.info.bullPrefix });
    const job = await queue.getJob(ids[17]!);
    expect(job?.name).toBe('basic.event');
    expect(job?.data).toMatchObject({
      v: 1,
      workspaceId: ws.workspaceId,
      payload: { n: expect.any(Number) },
    });
    expect(await queue.getJobCountByTypes('waiting')).toBe(250);
    await queue.close();
    const { rows } = await t.owner.query(
      `select count(*)::int as n from outbox_events where dispatched_at is null or locked_by is not null`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('does not dispatch events whose next_attempt_at is in the future', async () => {
    const ws = await seedWorkspace(t.owner);
    await insertEvents(t.owner, ws.workspaceId, 3, { queue: 'q-later' });
    await t.owner.query(`update outbox_events set next_attempt_at = now() + interval '1 hour'`);
    expect(await dispatcher().drain()).toBe(0);
    expect(await statusCounts(t.owner)).toEqual({ pending: 3 });
  });

  it('a failed enqueue counts an attempt, backs off exponentially with jitter (in SQL), then dead-letters with a redacted error', async () => {
    const ws = await seedWorkspace(t.owner);
    const [id] = await insertEvents(t.owner, ws.workspaceId, 1, { queue: 'q-broken', maxAttempts: 3 });
    const backoff: BackoffPolicy = { baseMs: 60_000, maxMs: 3_600_000, jitter: 0.5 };
    const d = dispatcher({ backoff });
    for (let attempt = 1; attempt <= 3; attempt++) {
      expect(await d.drain()).toBe(1);
      const { rows } = await t.owner.query(
        `select status, attempt_count, last_error, locked_by, locked_until,
                extract(epoch from next_attempt_at - updated_at) * 1000 as delay_ms
           from outbox_events where id = $1`,
        [id],
      );
      const row = rows[0];
      expect(row.attempt_count).toBe(attempt);
      expect(row.locked_by).toBeNull();
      expect(row.locked_until).toBeNull();
      expect(row.last_error).toContain('job rejected');
      expect(row.last_error).not.toMatch(/hunter2|abc123|X-Amz-Signature/);
      if (attempt < 3) {
        expect(row.status).toBe('pending');
        const { minMs, maxMs } = backoffBounds(attempt, backoff);
        expect(Number(row.delay_ms)).toBeGreaterThanOrEqual(minMs - 5);
        expect(Number(row.delay_ms)).toBeLessThanOrEqual(maxMs + 5);
        // make it due again for the next round
        await t.owner.query(`update outbox_events set next_attempt_at = now() where id = $1`, [id]);
      } else {
        expect(row.status).toBe('dead_letter');
      }
    }
    expect(await d.drain()).toBe(0);
  });

  it('a Redis that answers PING but refuses writes (OOM) counts no attempt: leases released, dispatcher paused', async () => {
    const ws = await seedWorkspace(t.owner);
    const ids = await insertEvents(t.owner, ws.workspaceId, 3, { queue: 'q-oom', maxAttempts: 2 });
    // The round's second lane claims the same workspace; its claim lands after the first lane
    // was refused and released (as when it waited for a new connection): it gets the events back.
    const d = dispatcher({
      redisRetryMs: 20,
      pollIntervalMs: 20,
      db: holdSecondClaim(() => d.stats.pauses === 1 && d.stats.released === 3),
    });
    expect(await d.drain(1)).toBe(6);
    // One add was tried: the claim that came back into a paused dispatcher is released untried.
    expect(producer.bulks).toHaveLength(1);
    expect(d.stats).toMatchObject({ claimed: 6, released: 6, failed: 0, pauses: 1 });
    // The loop tries again while PING answers, far past max_attempts, and still counts nothing.
    d.start();
    try {
      await waitFor('several more tries', async () => d.stats.released >= 12, 5000, 5);
    } finally {
      await d.stop();
    }
    const { rows } = await t.owner.query(
      `select status, attempt_count, locked_by from outbox_events where id = any($1)`,
      [ids],
    );
    expect(rows).toEqual(Array(3).fill({ status: 'pending', attempt_count: 0, locked_by: null }));
    expect(d.stats).toMatchObject({ failed: 0, deadLettered: 0 });
  });

  it('a fast-lane claim that comes back after another lane paused the dispatcher is released untried', async () => {
    const a = (await seedWorkspace(t.owner, 'oom-first')).workspaceId;
    const b = (await seedWorkspace(t.owner, 'oom-second')).workspaceId;
    const d = dispatcher({
      fastLanes: 2,
      pollIntervalMs: 60_000,
      redisRetryMs: 60_000,
      db: holdSecondClaim(() => d.stats.pauses === 1 && d.stats.released === 2),
    });
    await startAndLetSleep(d);
    const ids = [
      ...(await insertEvents(t.owner, a, 2, { queue: 'q-oom' })),
      ...(await insertEvents(t.owner, b, 2, { queue: 'q-oom' })),
    ];
    d.wake([a]); // lane 1: a's claim goes through, its add is refused → pause, release
    d.wake([b]); // lane 2: b's claim is held until then
    try {
      await waitFor('both claims released', async () => d.stats.released === 4, 5000, 5);
    } finally {
      await d.stop();
    }
    expect(producer.bulks).toEqual([[a]]);
    expect(d.stats).toMatchObject({ claimed: 4, released: 4, failed: 0, pauses: 1 });
    const { rows } = await t.owner.query(
      `select status, attempt_count, locked_by from outbox_events where id = any($1)`,
      [ids],
    );
    expect(rows).toEqual(Array(4).fill({ status: 'pending', attempt_count: 0, locked_by: null }));
  });

  it("a fast lane's bulk across workspaces charges its error to the failing event only", async () => {
    const a = (await seedWorkspace(t.owner, 'bulk-innocent')).workspaceId;
    const b = (await seedWorkspace(t.owner, 'bulk-poison')).workspaceId;
    const d = dispatcher({ fastLanes: 1, pollIntervalMs: 60_000 });
    await startAndLetSleep(d); // no round may claim them: the fast lane must
    const [innocent] = await insertEvents(t.owner, a, 1, { queue: 'q-mixed' });
    const [poison] = await insertEvents(t.owner, b, 1, { queue: 'q-mixed', type: 'poison.event' });
    d.wake([a, b]); // one lane, one cycle: both in one addBulk
    const row = async (id: string) =>
      (await t.owner.query(`select status, attempt_count from outbox_events where id = $1`, [id])).rows[0];
    try {
      await waitFor('the poison charged', async () => (await row(poison!)).attempt_count === 1, 5000, 5);
      await waitFor(
        'the innocent marked',
        async () => (await row(innocent!)).status === 'dispatched',
        5000,
        5,
      );
    } finally {
      await d.stop();
    }
    expect(await row(innocent!)).toEqual({ status: 'dispatched', attempt_count: 0 });
    expect(await row(poison!)).toEqual({ status: 'pending', attempt_count: 1 });
    // The path under test ran: both workspaces' events went in one failing bulk, and no round
    // claimed anything.
    expect(producer.bulks).toEqual([expect.arrayContaining([a, b])]);
    expect(d.stats.rounds).toBe(0);
  });

  it('a lane that fails ends the round only once the other lanes have finished their batches', async () => {
    const failing = (await seedWorkspace(t.owner, 'lane-fails')).workspaceId;
    const slow = (await seedWorkspace(t.owner, 'lane-slow')).workspaceId;
    await insertEvents(t.owner, failing, 1, { queue: 'q-lanes' });
    const [slowEvent] = await insertEvents(t.owner, slow, 1, { queue: 'q-slow' });
    const flaky = Object.create(t.agentDb) as typeof t.agentDb;
    flaky.queryInWorkspaces = ((parts, options) => {
      if (parts.some((p) => p.workspaceId === failing && p.statement.includes('outbox_claim_due'))) {
        return Promise.reject(new Error('connection terminated'));
      }
      return t.agentDb.queryInWorkspaces(parts, options);
    }) as typeof t.agentDb.queryInWorkspaces;
    const d = new OutboxDispatcher({ db: flaky, producer, concurrency: 2, batchSize: 100 });
    await expect(d.round()).rejects.toThrow('connection terminated');
    // The other lane's add (300 ms) and mark are done: nothing is left running behind the round.
    const { rows } = await t.owner.query(`select status, locked_by from outbox_events where id = $1`, [
      slowEvent,
    ]);
    expect(rows[0]).toEqual({ status: 'dispatched', locked_by: null });
  });

  it('one bad event in a batch does not fail its neighbours', async () => {
    const ws = await seedWorkspace(t.owner);
    await insertEvents(t.owner, ws.workspaceId, 5, { queue: 'q-fine' });
    await insertEvents(t.owner, ws.workspaceId, 2, { queue: 'q-broken' });
    await dispatcher().drain();
    const { rows } = await t.owner.query(
      `select queue, status, attempt_count from outbox_events order by queue, id`,
    );
    expect(
      rows
        .filter((r) => r.queue === 'q-fine')
        .every((r) => r.status === 'dispatched' && r.attempt_count === 0),
    ).toBe(true);
    expect(
      rows
        .filter((r) => r.queue === 'q-broken')
        .every((r) => r.status === 'pending' && r.attempt_count === 1),
    ).toBe(true);
  });

  it('reclaims expired leases of a dead dispatcher, without counting an attempt, and delivers them', async () => {
    const ws = await seedWorkspace(t.owner);
    const ids = await insertEvents(t.owner, ws.workspaceId, 4, { queue: 'q-reclaim' });
    await t.owner.query(
      `update outbox_events set status = 'dispatching', locked_by = 'ghost', locked_until = now() - interval '1 second'
        where id = any($1::uuid[])`,
      [ids.slice(0, 3)],
    );
    // one lease still valid: must not be touched
    await t.owner.query(
      `update outbox_events set status = 'dispatching', locked_by = 'alive', locked_until = now() + interval '1 hour'
        where id = $1`,
      [ids[3]],
    );
    const d = dispatcher({ reclaimIntervalMs: 0 });
    d.start();
    try {
      await waitFor(
        'the 3 reclaimed events dispatched',
        async () => (await statusCounts(t.owner)).dispatched === 3,
      );
    } finally {
      await d.stop();
    }
    const { rows } = await t.owner.query(`select id, status, attempt_count, locked_by from outbox_events`);
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const id of ids.slice(0, 3))
      expect(byId.get(id)).toMatchObject({ status: 'dispatched', attempt_count: 0 });
    expect(byId.get(ids[3])).toMatchObject({ status: 'dispatching', locked_by: 'alive' });
    expect(d.stats.reclaimed).toBe(3);
  });

  it('a lane that outlived its lease cannot fail the later claim of its event, whose job is in BullMQ', async () => {
    // One dispatcher, one event allowed one attempt. A fast lane claims it and its add stalls past
    // the lease; the loop reclaims the lease and a round lane claims the event again, under the
    // same locked_by. Then the stale lane's add fails: before claims were told apart by their
    // lease, its markFailed dead-lettered the event the round lane was delivering.
    const ws = await seedWorkspace(t.owner);
    const stalled = [signal(), signal()];
    const gates = [signal(), signal()];
    class StallingProducer extends QueueProducer {
      private calls = 0;
      override async addBulk(queue: string, events: readonly ClaimedEvent[]): Promise<void> {
        const call = this.calls++;
        if (call < 2) {
          stalled[call]!.resolve();
          await gates[call]!.promise;
        }
        if (call === 0) throw new Error('job rejected: the stale lane');
        await super.addBulk(queue, events);
      }
    }
    const stalling = new StallingProducer(redis, t.info.bullPrefix);
    const warnings: string[] = [];
    const d = new OutboxDispatcher({
      db: t.agentDb,
      producer: stalling,
      batchSize: 100,
      concurrency: 1,
      leaseMs: 300,
      pollIntervalMs: 50,
      reclaimIntervalMs: 50,
      logger: { info: () => undefined, error: () => undefined, warn: (msg) => warnings.push(msg) },
    });
    const row = async () =>
      (
        await t.owner.query(
          `select status, attempt_count, locked_by, (extract(epoch from locked_until) * 1000000)::bigint::text as lease
             from outbox_events where id = $1`,
          [id],
        )
      ).rows[0] as { status: string; attempt_count: number; locked_by: string | null; lease: string | null };
    await startAndLetSleep(d);
    const [id] = await insertEvents(t.owner, ws.workspaceId, 1, { queue: 'q-stale', maxAttempts: 1 });
    try {
      d.wake([ws.workspaceId]);
      await stalled[0]!.promise;
      const first = await row();
      await stalled[1]!.promise; // reclaimed, then claimed again by the round
      const second = await row();
      expect(second).toMatchObject({ status: 'dispatching', attempt_count: 0, locked_by: d.id });
      expect(second.lease).not.toBe(first.lease);

      gates[0]!.resolve();
      await waitFor('the stale lane to settle its failed add', async () =>
        warnings.includes('enqueue failed; the claim was no longer held'),
      );
      expect(await row()).toEqual(second); // untouched: not dead-lettered, no attempt counted

      gates[1]!.resolve();
      await waitFor('the later claim marked', async () => (await row()).status === 'dispatched');
    } finally {
      for (const gate of gates) gate.resolve();
      await d.stop();
      await stalling.close();
    }
    expect(await row()).toMatchObject({ status: 'dispatched', attempt_count: 0, locked_by: null });
    expect(d.stats).toMatchObject({ reclaimed: 1, deadLettered: 0, failed: 0, dispatched: 1 });
    const queue = new Queue('q-stale', { connection: redis, prefix: t.info.bullPrefix });
    expect(await queue.getJob(id!)).toBeDefined();
    await queue.close();
  });

  it('is fair: 10 events of a small workspace go out in the first claim round beside a 5,000-event backlog', async () => {
    const big = await seedWorkspace(t.owner, 'big');
    const small = await seedWorkspace(t.owner, 'small');
    await insertEvents(t.owner, big.workspaceId, 5000, { queue: 'q-fair' });
    await insertEvents(t.owner, small.workspaceId, 10, { queue: 'q-fair' });
    const reports: BatchReport[] = [];
    const d = dispatcher({
      batchSize: 100,
      concurrency: 1,
      batchesPerWorkspace: 2,
      onBatch: (r) => reports.push(r),
    });
    await d.drain();
    expect(await statusCounts(t.owner)).toEqual({ dispatched: 5010 });
    const smallIndex = reports.findIndex((r) => r.workspaceId === small.workspaceId);
    expect(smallIndex).toBeGreaterThanOrEqual(0);
    expect(reports[smallIndex]!.round).toBe(1);
    expect(reports[smallIndex]!.dispatched).toBe(10);
    // at most the big workspace's per-round cap went before it
    expect(smallIndex).toBeLessThanOrEqual(2);
  });

  it('is fair with the production defaults too: the small workspace goes out in round 1, before most of the backlog', async () => {
    const big = await seedWorkspace(t.owner, 'big-defaults');
    const small = await seedWorkspace(t.owner, 'small-defaults');
    await insertEvents(t.owner, big.workspaceId, 5000, { queue: 'q-fair-defaults' });
    await insertEvents(t.owner, small.workspaceId, 10, { queue: 'q-fair-defaults' });
    const reports: BatchReport[] = [];
    // No batch size, concurrency or per-workspace cap given: the engine's defaults.
    const d = new OutboxDispatcher({ db: t.agentDb, producer, onBatch: (r) => reports.push(r) });
    await d.drain();
    expect(await statusCounts(t.owner)).toEqual({ dispatched: 5010 });
    // Two lanes may claim the small workspace at once and split its 10 events (SKIP LOCKED).
    const smallReports = reports.filter((r) => r.workspaceId === small.workspaceId);
    expect(smallReports.map((r) => r.round)).toEqual(smallReports.map(() => 1));
    expect(smallReports.reduce((n, r) => n + r.dispatched, 0)).toBe(10);
    const lastSmall = reports.lastIndexOf(smallReports.at(-1)!);
    const bigBefore = reports.slice(0, lastSmall).reduce((n, r) => n + r.dispatched, 0);
    expect(bigBefore).toBeLessThan(5000 / 2);
  });

  it('a nudge naming a workspace gets it claimed at once by a fast lane, while a round works through a backlog', async () => {
    const others = [];
    for (let i = 0; i < 6; i++) others.push(await seedWorkspace(t.owner, `other-${i}`));
    const named = await seedWorkspace(t.owner, 'named');
    for (const o of others) await insertEvents(t.owner, o.workspaceId, 150, { queue: 'q-hint' });
    const reports: BatchReport[] = [];
    // After the round's first batch, the named workspace gets events and a nudge naming it.
    let nudged = false;
    const d = new OutboxDispatcher({
      db: t.agentDb,
      producer,
      batchSize: 100,
      concurrency: 1,
      pollIntervalMs: 60_000, // nothing but the nudges moves this dispatcher
      onBatch: (r) => {
        reports.push(r);
        if (!nudged) {
          nudged = true;
          void insertEvents(t.owner, named.workspaceId, 3, { queue: 'q-hint' }).then(() =>
            d.wake([named.workspaceId]),
          );
        }
      },
    });
    d.start();
    d.wake(); // a nudge naming no workspace: a round-robin pass over the backlog
    try {
      await waitFor('903 dispatched', async () => (await statusCounts(t.owner)).dispatched === 903);
    } finally {
      await d.stop();
    }
    expect(await statusCounts(t.owner)).toEqual({ dispatched: 903 });
    const namedIndex = firstAdd(named.workspaceId);
    // 12 batches of backlog exist; the named workspace went out within a few batches of its
    // nudge (batch 0 triggered it), not after the whole pass.
    expect(namedIndex).toBeGreaterThan(0);
    expect(namedIndex).toBeLessThanOrEqual(3);
    expect(reports.find((r) => r.workspaceId === named.workspaceId)!.dispatched).toBe(3);
  });

  it('a nudged workspace with a backlog gets one batch from the fast lane; the round-robin pass takes the rest', async () => {
    const big = await seedWorkspace(t.owner, 'big-nudged');
    const small = await seedWorkspace(t.owner, 'small-nudged');
    await insertEvents(t.owner, big.workspaceId, 1000, { queue: 'q-fast-cap' });
    const reports: BatchReport[] = [];
    const d = dispatcher({
      batchSize: 100,
      concurrency: 1,
      batchesPerWorkspace: 2,
      pollIntervalMs: 60_000,
      onBatch: (r) => reports.push(r),
    });
    d.start();
    await waitFor('the first round', async () => reports.length > 0);
    // The big workspace is being worked through by rounds; a nudge for the small one cuts in.
    await insertEvents(t.owner, small.workspaceId, 5, { queue: 'q-fast-cap' });
    const nudgedAt = producer.adds.length;
    d.wake([small.workspaceId]);
    try {
      await waitFor('1005 dispatched', async () => (await statusCounts(t.owner)).dispatched === 1005);
    } finally {
      await d.stop();
    }
    expect(reports.find((r) => r.workspaceId === small.workspaceId)!.dispatched).toBe(5);
    // Within the batches in flight when it was nudged (one round lane), not after the backlog.
    expect(firstAdd(small.workspaceId) - nudgedAt).toBeLessThanOrEqual(2);
    expect(reports.filter((r) => r.workspaceId === big.workspaceId).length).toBe(10);
  });

  it('fast lanes: nudges under a steady trickle are served without re-running rounds, batched across workspaces, every job marked', async () => {
    const spaces = [];
    for (let i = 0; i < 5; i++) spaces.push((await seedWorkspace(t.owner, `trickle-${i}`)).workspaceId);
    const reports: BatchReport[] = [];
    // Count the dispatcher's round trips (each markAndClaim is one queryInWorkspaces call).
    const roundTrips: number[] = [];
    const counted = Object.create(t.agentDb) as typeof t.agentDb;
    counted.queryInWorkspaces = ((parts, options) => {
      roundTrips.push(parts.length);
      return t.agentDb.queryInWorkspaces(parts, options);
    }) as typeof t.agentDb.queryInWorkspaces;
    const d = new OutboxDispatcher({
      db: counted,
      producer,
      fastLanes: 1,
      pollIntervalMs: 60_000,
      onBatch: (r) => reports.push(r),
    });
    // start() runs one round over an empty table; it is asleep before the first nudge.
    const roundsRun = await startAndLetSleep(d);
    const roundsBefore = d.stats.rounds;
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      // one event in each workspace, then one nudge naming all five: one lane, one cycle
      for (const ws of spaces) ids.push(...(await insertEvents(t.owner, ws, 1, { queue: 'q-trickle' })));
      d.wake(spaces);
      await new Promise((r) => setTimeout(r, 5));
    }
    try {
      await waitFor('100 dispatched', async () => (await statusCounts(t.owner)).dispatched === 100);
    } finally {
      await d.stop();
    }
    expect(await statusCounts(t.owner)).toEqual({ dispatched: 100 });
    // No discovery round ran for any of it: the round loop sleeps until its poll interval.
    expect(d.stats.rounds).toBe(roundsBefore);
    expect(roundsRun()).toBe(1);
    // Each report is one workspace's marks, carried by a later round trip or the mark timer.
    expect(reports.reduce((n, r) => n + r.dispatched, 0)).toBe(100);
    // 100 events in 20 nudges of 5 workspaces: one round trip claims all five (and marks what
    // earlier cycles delivered), instead of a claim and a mark per workspace (200).
    expect(roundTrips.length).toBeLessThanOrEqual(45);
    expect(Math.max(...roundTrips)).toBeGreaterThanOrEqual(5);
    expect(new Set(reports.map((r) => r.workspaceId))).toEqual(new Set(spaces));
    const queue = new Queue('q-trickle', { connection: redis, prefix: t.info.bullPrefix });
    expect(await queue.getJobCountByTypes('waiting')).toBe(100);
    expect((await queue.getJob(ids[42]!))?.id).toBe(ids[42]);
    await queue.close();
  });

  it('fast-lane deliveries still unmarked when stop() comes are marked by it, not released', async () => {
    const ws = (await seedWorkspace(t.owner, 'marks-on-stop')).workspaceId;
    await insertEvents(t.owner, ws, 7, { queue: 'q-marks' });
    const d = dispatcher({ pollIntervalMs: 60_000 });
    await startAndLetSleep(d); // the round takes these 7 (claim, add, mark)
    const more = await insertEvents(t.owner, ws, 3, { queue: 'q-marks' });
    // The fast lane's add is held once its jobs are in BullMQ: stop() comes before the lane could
    // hand its deliveries to a later cycle or the mark timer, deterministically.
    const hold = producer.holdAfterAdd('q-marks');
    d.wake([ws]);
    const queue = new Queue('q-marks', { connection: redis, prefix: t.info.bullPrefix });
    let stopped: Promise<void> | undefined;
    try {
      await hold.added;
      expect(await queue.getJobCountByTypes('waiting')).toBe(10);
      const { rows } = await t.owner.query(`select status from outbox_events where id = any($1::uuid[])`, [
        more,
      ]);
      expect(rows).toEqual(Array(3).fill({ status: 'dispatching' })); // in BullMQ, not yet marked
      stopped = d.stop();
    } finally {
      hold.release();
      await (stopped ?? d.stop());
      await queue.close();
    }
    expect(await statusCounts(t.owner)).toEqual({ dispatched: 10 });
    expect(d.stats.released).toBe(0);
    expect(d.stats.dispatched).toBe(10);
  });

  it('a fast-lane claim that fails still gets the earlier deliveries marked, without another nudge', async () => {
    const a = (await seedWorkspace(t.owner, 'marks-after-failure-a')).workspaceId;
    const b = (await seedWorkspace(t.owner, 'marks-after-failure-b')).workspaceId;
    // The first claim naming workspace b fails (a database blip); everything else goes through.
    let failed = false;
    const flaky = Object.create(t.agentDb) as typeof t.agentDb;
    flaky.queryInWorkspaces = ((parts, options) => {
      if (!failed && parts.some((p) => p.workspaceId === b && p.statement.includes('outbox_claim_due'))) {
        failed = true;
        return Promise.reject(new Error('connection terminated'));
      }
      return t.agentDb.queryInWorkspaces(parts, options);
    }) as typeof t.agentDb.queryInWorkspaces;
    const d = new OutboxDispatcher({ db: flaky, producer, fastLanes: 1, pollIntervalMs: 60_000 });
    await startAndLetSleep(d); // no round may claim them: the fast lane must
    const [first] = await insertEvents(t.owner, a, 1, { queue: 'q-marks-failure' });
    await insertEvents(t.owner, b, 1, { queue: 'q-marks-failure' });
    // One lane: the cycle for a runs, the hint for b waits for it; the lane's next cycle (inside
    // the mark delay, so it carries no marks) claims b and fails.
    d.wake([a]);
    d.wake([b]);
    try {
      await waitFor('the failed claim', async () => failed, 5000, 1);
      // No nudge follows; the delivered event must still be marked, not left to its lease.
      await waitFor(
        'the first event marked',
        async () => {
          const { rows } = await t.owner.query(`select status from outbox_events where id = $1`, [first]);
          return rows[0].status === 'dispatched';
        },
        15_000, // its lease (30 s) cannot have expired by then: marked, not reclaimed
      );
    } finally {
      await d.stop();
    }
    expect(d.stats.reclaimed).toBe(0);
  });

  it('stop() finishes the batch in flight and leaves no lease behind', async () => {
    const ws = await seedWorkspace(t.owner);
    await insertEvents(t.owner, ws.workspaceId, 3000, { queue: 'q-stop' });
    // stop() as soon as the first batch is settled: the other lane's batch is in flight then.
    let stopped: Promise<void> | undefined;
    const d = dispatcher({
      batchSize: 200,
      onBatch: () => {
        stopped ??= d.stop();
      },
    });
    d.start();
    await waitFor('the first batch', async () => stopped !== undefined);
    await stopped;
    const counts = await statusCounts(t.owner);
    expect(counts.dispatching ?? 0).toBe(0);
    // Stopped mid-backlog: whole batches only (the first, and the other lane's if it was in flight).
    expect([200, 400]).toContain(counts.dispatched);
    expect(counts.pending).toBe(3000 - counts.dispatched!);
    expect(d.stats).toMatchObject({ dispatched: counts.dispatched, released: 0 });
    const { rows } = await t.owner.query(
      `select count(*)::int as n from outbox_events where attempt_count > 0`,
    );
    expect(rows[0].n).toBe(0);
  });
});
