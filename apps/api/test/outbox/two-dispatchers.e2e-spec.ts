import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { connectRedis, type RedisClient } from '@listing/outbox';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { DISPATCHER, killAll, parseTrace, roleEnv, spawnNode, waitUntil } from './processes';

const t = useTestDatabase();
jest.setTimeout(90000);

describe('two dispatcher processes over 10,000 events from 20 workspaces', () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'outbox-two-'));
  let redis: RedisClient;

  beforeAll(async () => {
    redis = connectRedis(t.info.redis);
  });
  afterAll(async () => {
    await killAll();
    await redis.quit();
  });

  it('delivers every event, never enqueues one twice while its lease is valid, leaves nothing pending or dispatching; SIGTERM mid-run exits 0 holding no lease', async () => {
    const workspaces: string[] = [];
    for (let i = 0; i < 20; i++) workspaces.push((await seedWorkspace(t.owner, `w${i}`)).workspaceId);
    const insert = async (perWorkspace: number) => {
      for (const [i, ws] of workspaces.entries()) {
        await t.owner.query(
          `insert into outbox_events (id, workspace_id, queue, event_type, payload)
           select gen_random_uuid(), $1, $2, 'load.event', jsonb_build_object('n', g)
             from generate_series(1, $3::integer) g`,
          [ws, i % 2 ? 'q-load-b' : 'q-load-a', perWorkspace],
        );
      }
    };
    await insert(250); // half before the dispatchers start, half while they run

    const traces = [path.join(tmp, 'a.jsonl'), path.join(tmp, 'b.jsonl')];
    const env = (name: string, trace: string) =>
      roleEnv(t, {
        OUTBOX_DISPATCHER_ID: name,
        OUTBOX_FAULTS_ENABLED: '1',
        OUTBOX_TRACE_FILE: trace,
        OUTBOX_BATCH_SIZE: '100',
        OUTBOX_CONCURRENCY: '2',
        OUTBOX_POLL_INTERVAL_MS: '50',
      });
    const a = spawnNode('dispatcher-a', DISPATCHER, env('dispatcher-a', traces[0]!));
    const b = spawnNode('dispatcher-b', DISPATCHER, env('dispatcher-b', traces[1]!));
    for (let round = 0; round < 3; round++) await insert(50);
    // SIGTERM one of them mid-run: it stops claiming, finishes its in-flight batches, releases
    // whatever it still holds and exits 0; the other one carries on.
    // Only once both have been claiming side by side (SKIP LOCKED between two live processes), or
    // the run could pass with one dispatcher working after the other.
    const traced = (file: string) => {
      try {
        return parseTrace(readFileSync(file, 'utf8'));
      } catch {
        return [];
      }
    };
    await waitUntil('both dispatchers enqueueing at the same time', async () => {
      const [byA, byB] = traces.map(traced) as [ReturnType<typeof traced>, ReturnType<typeof traced>];
      if (byA.length < 300 || byB.length < 300) return false;
      const span = (adds: typeof byA) => [
        Math.min(...adds.map((x) => x.at)),
        Math.max(...adds.map((x) => x.at)),
      ];
      const [a0, a1] = span(byA) as [number, number];
      const [b0, b1] = span(byB) as [number, number];
      return a0 < b1 && b0 < a1;
    });
    expect(await a.stop()).toEqual({ code: 0, signal: null });
    const { rows: heldByA } = await t.owner.query(
      `select count(*)::int as n from outbox_events where locked_by = 'dispatcher-a'`,
    );
    expect(heldByA[0].n).toBe(0);
    for (let round = 0; round < 2; round++) await insert(50);

    await waitUntil(
      'all 10,000 dispatched',
      async () => {
        const { rows } = await t.owner.query(
          `select count(*)::int as n from outbox_events where status = 'dispatched'`,
        );
        return rows[0].n === 10_000;
      },
      60_000,
      200,
    );
    expect(await b.stop()).toEqual({ code: 0, signal: null });

    const { rows: statuses } = await t.owner.query(
      `select status, count(*)::int as n, max(attempt_count) as max_attempts from outbox_events group by status`,
    );
    expect(statuses).toEqual([{ status: 'dispatched', n: 10_000, max_attempts: 0 }]);

    // Count the adds BullMQ accepted, per event, from both processes.
    const adds = traces.flatMap((file) => parseTrace(readFileSync(file, 'utf8')));
    const byEvent = new Map<string, typeof adds>();
    for (const add of adds) byEvent.set(add.id, [...(byEvent.get(add.id) ?? []), add]);
    expect(byEvent.size).toBe(10_000);
    for (const list of byEvent.values()) {
      list.sort((x, y) => x.at - y.at);
      for (let i = 1; i < list.length; i++)
        expect(list[i]!.at).toBeGreaterThanOrEqual(list[i - 1]!.leaseUntil);
    }
    expect(adds.length).toBe(10_000); // with 30 s leases and no crash, in fact never twice
    // Both processes took part.
    expect(adds.filter((x) => x.by === 'dispatcher-a').length).toBeGreaterThan(0);
    expect(adds.filter((x) => x.by === 'dispatcher-b').length).toBeGreaterThan(0);

    // And BullMQ holds exactly those jobs.
    let jobs = 0;
    for (const name of ['q-load-a', 'q-load-b']) {
      const queue = new Queue(name, { connection: redis, prefix: t.info.bullPrefix });
      jobs += await queue.getJobCountByTypes('waiting');
      await queue.close();
    }
    expect(jobs).toBe(10_000);
  });
});
