import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { connectRedis, type RedisClient } from '@listing/outbox';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import {
  createTestTables,
  DISPATCHER,
  effectCount,
  killAll,
  parseTrace,
  roleEnv,
  spawnNode,
  waitUntil,
  WORKER,
} from './processes';

const t = useTestDatabase();
jest.setTimeout(60000);
const FIXTURE = path.join('test', 'outbox', 'fixtures', 'commit-and-crash.cjs');

/** Seed acceptance checks (3) and (4), with real processes killed by SIGKILL. */
describe('outbox crash proofs (real processes, SIGKILL)', () => {
  let ws: { workspaceId: string };
  let redis: RedisClient;
  let queue: Queue;
  const tmp = mkdtempSync(path.join(tmpdir(), 'outbox-crash-'));

  beforeAll(async () => {
    await createTestTables(t.owner);
    ws = await seedWorkspace(t.owner);
    redis = connectRedis(t.info.redis);
    queue = new Queue('outbox-test', { connection: redis, prefix: t.info.bullPrefix });
  });
  afterAll(async () => {
    await killAll();
    await queue.close();
    await redis.quit();
  });

  const eventOf = async (marker: string) => {
    const { rows } = await t.owner.query(`select * from outbox_events where payload->>'marker' = $1`, [
      marker,
    ]);
    return rows[0];
  };

  it('refuses to arm a fault hook outside NODE_ENV=test', async () => {
    const p = spawnNode('fixture', FIXTURE, {
      ...roleEnv(t),
      NODE_ENV: 'production',
      OUTBOX_FAULTS_ENABLED: '1',
      OUTBOX_FAULT: 'after-business-commit',
      WORKSPACE_ID: ws.workspaceId,
      MARKER: 'refused',
    });
    expect(await p.exited).toEqual({ code: 1, signal: null });
    expect(p.output()).toContain('OUTBOX_FAULTS_REFUSED');
    expect(await eventOf('refused')).toBeUndefined();
  });

  it('(3) the process is SIGKILLed right after the business commit; a dispatcher started afterwards delivers the event', async () => {
    const marker = `after-commit-${randomUUID()}`;
    const api = spawnNode('api-standin', FIXTURE, {
      ...roleEnv(t),
      OUTBOX_FAULTS_ENABLED: '1',
      OUTBOX_FAULT: 'after-business-commit',
      WORKSPACE_ID: ws.workspaceId,
      MARKER: marker,
    });
    expect(await api.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(api.output()).not.toContain('survived');

    // The commit happened: business row and event, nothing dispatched yet.
    const business = await t.owner.query(
      `select count(*)::int as n from outbox_test_business where marker = $1`,
      [marker],
    );
    expect(business.rows[0].n).toBe(1);
    const before = await eventOf(marker);
    expect(before).toMatchObject({ status: 'pending', attempt_count: 0, queue: 'outbox-test' });
    expect(await queue.getJob(before.id)).toBeUndefined();

    // Dispatcher and worker started only now.
    const worker = spawnNode('worker', WORKER, roleEnv(t));
    await worker.waitForOutput(/worker ready/);
    const dispatcher = spawnNode('dispatcher', DISPATCHER, roleEnv(t));
    await waitUntil('the effect of the event', async () => (await effectCount(t.owner, before.id)) === 1);
    await waitUntil(
      'the event marked dispatched',
      async () => (await eventOf(marker)).status === 'dispatched',
    );
    expect(await effectCount(t.owner, before.id)).toBe(1);
    expect(await dispatcher.stop()).toEqual({ code: 0, signal: null });
    expect(await worker.stop()).toEqual({ code: 0, signal: null });
  });

  it('(4) the dispatcher is SIGKILLed after BullMQ accepted the jobs and before marking: redelivered, effect exactly once — also when the first job was already removed', async () => {
    const kept = `kept-${randomUUID()}`;
    const removed = `removed-${randomUUID()}`;
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload)
       values ($1, $3, 'outbox-test', 'outbox.test-effect', jsonb_build_object('marker', $4::text)),
              ($2, $3, 'outbox-test', 'outbox.test-effect', jsonb_build_object('marker', $5::text))`,
      [randomUUID(), randomUUID(), ws.workspaceId, kept, removed],
    );
    const keptId = (await eventOf(kept)).id as string;
    const removedId = (await eventOf(removed)).id as string;
    const trace = path.join(tmp, 'adds.jsonl');
    const faultEnv = { OUTBOX_FAULTS_ENABLED: '1', OUTBOX_TRACE_FILE: trace, OUTBOX_LEASE_MS: '1500' };

    const worker = spawnNode('worker', WORKER, roleEnv(t));
    await worker.waitForOutput(/worker ready/);

    const first = spawnNode('dispatcher-1', DISPATCHER, {
      ...roleEnv(t, faultEnv),
      OUTBOX_FAULT: 'after-enqueue',
      OUTBOX_DISPATCHER_ID: 'dispatcher-1',
    });
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    for (const marker of [kept, removed]) {
      expect(await eventOf(marker)).toMatchObject({ status: 'dispatching', locked_by: 'dispatcher-1' });
    }
    // The worker applies both once.
    await waitUntil(
      'first deliveries',
      async () => (await effectCount(t.owner, keptId)) === 1 && (await effectCount(t.owner, removedId)) === 1,
    );
    await waitUntil('first jobs completed', async () => (await queue.getJob(removedId))?.finishedOn);
    // BullMQ forgets one of them, so it cannot deduplicate the redelivery.
    expect(await queue.remove(removedId)).toBe(1);
    expect(await queue.getJob(removedId)).toBeUndefined();

    const second = spawnNode('dispatcher-2', DISPATCHER, {
      ...roleEnv(t, faultEnv),
      OUTBOX_DISPATCHER_ID: 'dispatcher-2',
      OUTBOX_RECLAIM_INTERVAL_MS: '200',
    });
    await waitUntil('both events marked dispatched', async () => {
      const a = await eventOf(kept);
      const b = await eventOf(removed);
      return a.status === 'dispatched' && b.status === 'dispatched';
    });
    // The removed one ran again in the worker: the inbox saw it and skipped the effect.
    const redelivered = await waitUntil('the redelivered job to complete', async () => {
      const job = await queue.getJob(removedId);
      return job?.finishedOn ? job : undefined;
    });
    expect(redelivered.returnvalue).toEqual({ duplicate: true });
    expect((await queue.getJob(keptId))!.returnvalue).toMatchObject({ duplicate: false });
    expect(await effectCount(t.owner, keptId)).toBe(1);
    expect(await effectCount(t.owner, removedId)).toBe(1);

    // Each event was enqueued twice, the second time only after the first lease expired.
    const adds = parseTrace(readFileSync(trace, 'utf8'));
    for (const id of [keptId, removedId]) {
      const mine = adds.filter((a) => a.id === id).sort((x, y) => x.at - y.at);
      expect(mine.map((a) => a.by)).toEqual(['dispatcher-1', 'dispatcher-2']);
      expect(mine[1]!.at).toBeGreaterThanOrEqual(mine[0]!.leaseUntil);
    }
    expect(await second.stop()).toEqual({ code: 0, signal: null });
    expect(await worker.stop()).toEqual({ code: 0, signal: null });
  });

  it('the worker is SIGKILLed after the handler committed and before BullMQ heard of it: the job runs again in a new worker, the effect stays single', async () => {
    const marker = `worker-crash-${randomUUID()}`;
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload)
       values ($1, $2, 'outbox-test', 'outbox.test-effect', jsonb_build_object('marker', $3::text))`,
      [randomUUID(), ws.workspaceId, marker],
    );
    const id = (await eventOf(marker)).id as string;
    // A short BullMQ lock so the job held by the dead worker is given up in seconds, not 30.
    const lock = { OUTBOX_WORKER_LOCK_MS: '1000' };

    const doomed = spawnNode('worker-doomed', WORKER, {
      ...roleEnv(t, lock),
      OUTBOX_FAULTS_ENABLED: '1',
      OUTBOX_FAULT: 'after-handler-commit',
    });
    await doomed.waitForOutput(/worker ready/);
    const dispatcher = spawnNode('dispatcher', DISPATCHER, roleEnv(t));
    expect(await doomed.exited).toEqual({ code: null, signal: 'SIGKILL' });

    // The effect and its inbox row committed; BullMQ still holds the job as active under the dead
    // worker's lock: it was never completed.
    expect(await effectCount(t.owner, id)).toBe(1);
    const inbox = await t.owner.query(`select count(*)::int as n from outbox_inbox where event_id = $1`, [
      id,
    ]);
    expect(inbox.rows[0].n).toBe(1);
    const held = await queue.getJob(id);
    expect(held?.finishedOn).toBeUndefined();
    expect(await held!.getState()).toBe('active');

    const worker = spawnNode('worker', WORKER, roleEnv(t, lock));
    const rerun = await waitUntil('the job to complete in the new worker', async () => {
      const job = await queue.getJob(id);
      return job?.finishedOn ? job : undefined;
    });
    expect(rerun.returnvalue).toEqual({ duplicate: true });
    expect(await effectCount(t.owner, id)).toBe(1);
    expect(await eventOf(marker)).toMatchObject({ status: 'dispatched', attempt_count: 0 });
    expect(await dispatcher.stop()).toEqual({ code: 0, signal: null });
    expect(await worker.stop()).toEqual({ code: 0, signal: null });
  });
});
