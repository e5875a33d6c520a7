import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { Database, sql } from '@listing/db';
import { CuttableProxy, freeTcpPort, seedWorkspace, useTestDatabase } from '@listing/testing';
import { z } from 'zod';
import {
  defineJob,
  JobRegistry,
  OutboxDispatcher,
  OutboxHandler,
  OutboxWorkerRuntime,
  QueueProducer,
  redisOptionsFromUrl,
} from '../src';
import { connectedRedis, createCounterTable, waitFor } from './helpers';

const t = useTestDatabase();
jest.setTimeout(60_000);

const QUEUE = 'q-runtime-outage';
const countJob = defineJob({
  name: 'outage.count',
  queue: QUEUE,
  schema: z.object({ counter: z.string() }),
  maxAttempts: 2,
});

const providerJob = defineJob({
  name: 'outage.provider',
  queue: QUEUE,
  schema: z.object({}),
  maxAttempts: 2,
});

class CountHandlers {
  constructor(private readonly db: Database) {}

  /** A provider that refuses connections: the same error code as a database that is down. */
  @OutboxHandler(providerJob)
  async provider() {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  }

  @OutboxHandler(countJob)
  async count(payload: { counter: string }) {
    await this.db.executor.execute(
      sql`update outage_counters set n = n + 1 where workspace_id = app_current_workspace() and name = ${payload.counter}`,
    );
    return { counted: payload.counter };
  }
}

/**
 * The worker's PostgreSQL goes away (a TCP proxy cut) while its jobs keep arriving. With two
 * attempts and a 10 ms handler backoff, counting those failures would fail the job for good in
 * milliseconds, and its dead-letter write would fail too (same database): the event would stay
 * 'dispatched' with nobody working on it. Instead the job waits in its queue, uncounted.
 */
describe('worker runtime while PostgreSQL is unreachable', () => {
  let proxy: CuttableProxy;
  let workerDb: Database;
  let redis: Redis;
  let producer: QueueProducer;
  let runtime: OutboxWorkerRuntime;
  let queue: Queue;
  let ws: string;

  beforeAll(async () => {
    await createCounterTable(t.owner, 'outage_counters');
    ws = (await seedWorkspace(t.owner)).workspaceId;
    const target = new URL(t.info.appUrl);
    proxy = new CuttableProxy(await freeTcpPort(), {
      host: target.hostname,
      port: Number(target.port || 5432),
    });
    await proxy.open();
    workerDb = new Database({ connectionString: proxy.urlThrough(t.info.appUrl), max: 4 });
    redis = await connectedRedis(t.info.redisUrl);
    producer = new QueueProducer(redis, t.info.bullPrefix, {
      completedAgeSec: 3600,
      failedAgeSec: 3600,
      handlerBackoffMs: 10,
    });
    runtime = new OutboxWorkerRuntime({
      db: workerDb,
      registry: new JobRegistry().registerHandlers(new CountHandlers(workerDb)),
      connection: redisOptionsFromUrl(t.info.redisUrl),
      prefix: t.info.bullPrefix,
      concurrency: 2,
      databaseRetryMs: 200,
    });
    await runtime.start();
    queue = new Queue(QUEUE, { connection: redis, prefix: t.info.bullPrefix });
  });
  afterAll(async () => {
    await proxy.open().catch(() => undefined);
    await runtime.close();
    await queue.close();
    await producer.close();
    await redis.quit();
    await workerDb.close();
    await proxy.cut();
  });

  it('returns the job to its queue without counting an attempt, and runs it once the database is back', async () => {
    await t.owner.query(`insert into outage_counters (workspace_id, name) values ($1, 'c')`, [ws]);
    const id = randomUUID();
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload, max_attempts) values ($1, $2, $3, $4, $5, 2)`,
      [id, ws, QUEUE, countJob.name, JSON.stringify({ counter: 'c' })],
    );
    await proxy.cut();
    await new OutboxDispatcher({ db: t.db, producer }).drain(); // the dispatcher's database is fine
    // Several tries' worth of outage (pause 200 ms, backoff 10 ms, two attempts).
    await new Promise((r) => setTimeout(r, 2000));
    const during = (await queue.getJob(id))!;
    expect(await during.getState()).not.toBe('failed');
    expect(during.attemptsMade).toBe(0);

    await proxy.open();
    const done = await waitFor('the job to complete', async () => {
      const j = await queue.getJob(id);
      return j?.finishedOn ? j : undefined;
    });
    expect(done.failedReason).toBeFalsy();
    expect(done.returnvalue).toEqual({ duplicate: false, result: { counted: 'c' } });
    const { rows } = await t.owner.query(`select n from outage_counters where workspace_id = $1`, [ws]);
    expect(rows[0].n).toBe(1);
    const event = await t.owner.query(`select status, attempt_count from outbox_events where id = $1`, [id]);
    expect(event.rows[0]).toEqual({ status: 'dispatched', attempt_count: 0 });
  });

  it('a provider refusing connections (the database answering) still counts attempts and dead-letters', async () => {
    const id = randomUUID();
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload, max_attempts) values ($1, $2, $3, $4, '{}', 2)`,
      [id, ws, QUEUE, providerJob.name],
    );
    await new OutboxDispatcher({ db: t.db, producer }).drain();
    await waitFor('the event to be dead-lettered', async () => {
      const { rows } = await t.owner.query(`select status from outbox_events where id = $1`, [id]);
      return rows[0].status === 'dead_letter';
    });
    const job = (await queue.getJob(id))!;
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(2);
  });
});
