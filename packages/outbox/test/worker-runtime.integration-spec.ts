import { randomUUID } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import { sql } from '@listing/db';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { z } from 'zod';
import {
  defineJob,
  JobRegistry,
  OutboxDispatcher,
  OutboxHandler,
  OutboxWorkerRuntime,
  QueueProducer,
  type JobContext,
  type RedisClient,
  connectBullmqRedis,
} from '../src';
import { connectedRedis, createCounterTable, jobInState, stallJob, waitFor } from './helpers';

const t = useTestDatabase();

const QUEUE = 'q-runtime';
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const counterJob = defineJob({
  name: 'runtime.count',
  queue: QUEUE,
  schema: z.object({ counter: z.string().min(1) }),
  maxAttempts: 5,
});

/** A database-only effect that is not idempotent by itself: only the inbox makes it exactly-once. */
class CounterHandlers {
  seen: Array<{ workspace: string | null; setting: string; attempt: number }> = [];
  constructor(private readonly db: typeof t.agentDb) {}

  @OutboxHandler(counterJob)
  async count(payload: { counter: string }, ctx: JobContext) {
    const setting = await this.db.executor.execute<{ ws: string }>(
      sql`select current_setting('app.workspace_id', true) as ws`,
    );
    this.seen.push({ workspace: ctx.workspaceId, setting: setting.rows[0]!.ws, attempt: ctx.attempt });
    await this.db.executor.execute(
      sql`update runtime_counters set n = n + 1 where workspace_id = app_current_workspace() and name = ${payload.counter}`,
    );
    return { counted: payload.counter };
  }
}

const outsideJob = defineJob({
  name: 'runtime.outside',
  queue: QUEUE,
  schema: z.object({ counter: z.string().min(1) }),
  transaction: false,
});

/** A job that opens its own transaction (e.g. around a slow fetch): the runtime opens none. */
class OutsideHandlers {
  seen: Array<{ workspace: string | null; inTransaction: boolean; setting: string }> = [];
  constructor(private readonly db: typeof t.agentDb) {}

  @OutboxHandler(outsideJob)
  async run(payload: { counter: string }, ctx: JobContext) {
    const setting = await this.db.executor.execute<{ ws: string }>(
      sql`select coalesce(current_setting('app.workspace_id', true), '') as ws`,
    );
    this.seen.push({
      workspace: ctx.workspaceId,
      inTransaction: this.db.isInTransaction(),
      setting: setting.rows[0]!.ws,
    });
    await this.db.withWorkspace(ctx.workspaceId!, () =>
      this.db.executor.execute(
        sql`update runtime_counters set n = n + 1 where workspace_id = app_current_workspace() and name = ${payload.counter}`,
      ),
    );
    return { counted: payload.counter };
  }
}

describe('OutboxWorkerRuntime (real BullMQ worker, real PostgreSQL)', () => {
  let redis: RedisClient;
  let producer: QueueProducer;
  let runtime: OutboxWorkerRuntime;
  let handlers: CounterHandlers;
  let outside: OutsideHandlers;
  let queue: Queue;
  let events: QueueEvents;
  let ws: string;
  let eventsRedis: RedisClient;

  beforeAll(async () => {
    await createCounterTable(t.owner, 'runtime_counters');
    ws = (await seedWorkspace(t.owner)).workspaceId;
    redis = await connectedRedis(t.info.redis);
    producer = new QueueProducer(redis, t.info.bullPrefix, {
      completedAgeSec: 3600,
      failedAgeSec: 3600,
      handlerBackoffMs: 10,
    });
    handlers = new CounterHandlers(t.agentDb);
    outside = new OutsideHandlers(t.agentDb);
    const registry = new JobRegistry().registerHandlers(handlers).registerHandlers(outside);
    runtime = new OutboxWorkerRuntime({
      db: t.agentDb,
      registry,
      redis: t.info.redis,
      prefix: t.info.bullPrefix,
      concurrency: 4,
    });
    await runtime.start();
    queue = new Queue(QUEUE, { connection: redis, prefix: t.info.bullPrefix });
    events = new QueueEvents(QUEUE, {
      connection: (eventsRedis = connectBullmqRedis(t.info.redis)),
      prefix: t.info.bullPrefix,
    });
    await events.waitUntilReady();
  });
  afterAll(async () => {
    await runtime.close();
    await events.close();
    eventsRedis.disconnect();
    await queue.close();
    await producer.close();
    await redis.quit();
  });

  const insertEvent = async (payload: Record<string, unknown>, maxAttempts = 5) => {
    const id = randomUUID();
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload, max_attempts) values ($1, $2, $3, $4, $5, $6)`,
      [id, ws, QUEUE, counterJob.name, JSON.stringify(payload), maxAttempts],
    );
    return id;
  };
  const dispatch = () => new OutboxDispatcher({ db: t.agentDb, producer }).drain();
  const counter = async (name: string) =>
    (await t.owner.query(`select n from runtime_counters where workspace_id = $1 and name = $2`, [ws, name]))
      .rows[0]?.n;

  it('runs the handler in a transaction bound to the event workspace, and keeps the completed job for the lease window', async () => {
    await t.owner.query(`insert into runtime_counters (workspace_id, name) values ($1, 'a')`, [ws]);
    const id = await insertEvent({ counter: 'a' });
    await dispatch();
    const job = await waitFor('job completed', async () => {
      const j = await queue.getJob(id);
      return j?.finishedOn ? j : undefined;
    });
    expect(job.returnvalue).toEqual({ duplicate: false, result: { counted: 'a' } });
    expect(await counter('a')).toBe(1);
    expect(handlers.seen.at(-1)).toEqual({ workspace: ws, setting: ws, attempt: 1 });
    expect(job.opts.removeOnComplete).toEqual({ age: 3600 });
    expect(job.opts.jobId).toBe(id);
  });

  it('transaction: false: the runtime opens no transaction and writes no inbox row; the handler binds its own', async () => {
    await t.owner.query(`insert into runtime_counters (workspace_id, name) values ($1, 'outside')`, [ws]);
    const id = randomUUID();
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload) values ($1, $2, $3, $4, $5)`,
      [id, ws, QUEUE, outsideJob.name, JSON.stringify({ counter: 'outside' })],
    );
    await dispatch();
    const job = await waitFor('job completed', async () => {
      const j = await queue.getJob(id);
      return j?.finishedOn ? j : undefined;
    });
    expect(job.returnvalue).toEqual({ duplicate: false, result: { counted: 'outside' } });
    expect(outside.seen).toEqual([{ workspace: ws, inTransaction: false, setting: '' }]);
    expect(await counter('outside')).toBe(1);
    const inbox = await t.owner.query(`select 1 from outbox_inbox where event_id = $1`, [id]);
    expect(inbox.rowCount).toBe(0);
  });

  it('a redelivered event (BullMQ job gone) finds its inbox row: the effect happens exactly once', async () => {
    await t.owner.query(`insert into runtime_counters (workspace_id, name) values ($1, 'b')`, [ws]);
    const id = await insertEvent({ counter: 'b' });
    await dispatch();
    await waitFor('first run', async () => (await queue.getJob(id))?.finishedOn);
    await queue.remove(id);
    // at-least-once: the dispatcher delivers it again
    await t.owner.query(`update outbox_events set status = 'pending', dispatched_at = null where id = $1`, [
      id,
    ]);
    await dispatch();
    const again = await waitFor('second run', async () => {
      const j = await queue.getJob(id);
      return j?.finishedOn ? j : undefined;
    });
    expect(again.returnvalue).toEqual({ duplicate: true });
    expect(await counter('b')).toBe(1);
    const inbox = await t.owner.query(`select handler from outbox_inbox where event_id = $1`, [id]);
    expect(inbox.rows).toEqual([{ handler: 'runtime.count' }]);
  });

  it('a failing attempt rolls back its inbox row with the effect, so the retry applies it', async () => {
    // The processor is driven directly with job-shaped objects (attempt 1 fails after its effect).
    const id = await insertEvent({ counter: 'c' });
    const original = handlers.count.bind(handlers);
    let calls = 0;
    const registry = new JobRegistry().handle(counterJob, async (p, ctx) => {
      calls++;
      await original(p, ctx);
      if (calls === 1) throw new Error('transient failure after the effect');
      return null;
    });
    const local = new OutboxWorkerRuntime({
      db: t.agentDb,
      registry,
      redis: t.info.redis,
      prefix: t.info.bullPrefix,
      queues: [],
    });
    await t.owner.query(`insert into runtime_counters (workspace_id, name) values ($1, 'c')`, [ws]);
    const job = {
      id,
      name: counterJob.name,
      data: { v: 1, workspaceId: ws, payload: { counter: 'c' }, createdAt: Date.now() },
      opts: { attempts: 5 },
      attemptsMade: 0,
    };
    await expect(local.process(job as never)).rejects.toThrow('transient failure');
    expect(await counter('c')).toBe(0); // effect and inbox row rolled back together
    await expect(local.process({ ...job, attemptsMade: 1 } as never)).resolves.toEqual({
      duplicate: false,
      result: null,
    });
    expect(await counter('c')).toBe(1);
    await expect(local.process({ ...job, attemptsMade: 2 } as never)).resolves.toEqual({ duplicate: true });
    expect(await counter('c')).toBe(1);
  });

  it('a poison payload fails at once without retry and dead-letters the event', async () => {
    const id = await insertEvent({ counter: 42 }, 5);
    await dispatch();
    const failed = await waitFor('poison job failed', async () => {
      const j = await queue.getJob(id);
      return j?.failedReason ? j : undefined;
    });
    expect(failed.attemptsMade).toBe(1);
    expect(failed.failedReason).toMatch(/poison payload/);
    const { rows } = await t.owner.query(
      `select status, attempt_count, last_error from outbox_events where id = $1`,
      [id],
    );
    expect(rows[0]).toMatchObject({ status: 'dead_letter', attempt_count: 1 });
    expect(rows[0].last_error).toMatch(/poison payload for runtime.count: counter/);
  });

  it('a job that fails for good after its event row was deleted writes the dead letter again, for the reaction', async () => {
    // What a retention shorter than the job's life leaves: the job in BullMQ, its row gone. Before,
    // the failure had nowhere to land: no dead letter, no reaction, the business row stuck.
    const createdAt = new Date(Date.now() - 60_000);
    const id = randomUUID();
    await producer.add(QUEUE, {
      id,
      workspaceId: ws,
      queue: QUEUE,
      type: counterJob.name,
      payload: { counter: 42 }, // poison: fails for good at once
      attemptCount: 0,
      maxAttempts: 5,
      createdAt,
      lockedUntil: new Date(),
      lease: '0',
      traceparent: TRACEPARENT,
      tracestate: 'vendor=1',
    });
    const row = await waitFor('the dead letter written again, and taken by the reactor', async () => {
      const { rows } = await t.owner.query(
        `select workspace_id, queue, event_type, payload, status, attempt_count, max_attempts, last_error,
                created_at, locked_by, dispatched_at, dead_letter_handled_at, traceparent, tracestate
           from outbox_events where id = $1`,
        [id],
      );
      const found = rows[0] as Record<string, unknown> | undefined;
      return found?.dead_letter_handled_at ? found : undefined;
    });
    expect(row).toMatchObject({
      workspace_id: ws,
      queue: QUEUE,
      event_type: counterJob.name,
      payload: { counter: 42 },
      status: 'dead_letter',
      attempt_count: 1,
      max_attempts: 5,
      created_at: createdAt,
      locked_by: null,
      dispatched_at: null,
      // The job's trace context (untraced here, the stored one unchanged): a retry stays in the trace.
      traceparent: TRACEPARENT,
      tracestate: 'vendor=1',
    });
    expect(row.last_error).toMatch(/poison payload for runtime.count: counter/);
  });

  it("a job of a type this worker does not know (a newer version's) is delayed for another worker, not failed", async () => {
    const id = randomUUID();
    await queue.add(
      'runtime.from-the-future',
      { v: 1, workspaceId: ws, payload: {} },
      { jobId: id, attempts: 3 },
    );
    const delayed = await jobInState(queue, id, 'delayed');
    expect(delayed.failedReason).toBeFalsy();
    expect(delayed.attemptsMade).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(await queue.getJobState(id)).toBe('delayed'); // for the minute, not retried at once
    await delayed.remove();

    // One that no worker has known for a day fails for good, and this worker dead-letters its
    // event itself: the failed-job sweep, which would otherwise find it, may be switched off.
    const old = randomUUID();
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload, status, dispatched_at)
       values ($1, $2, $3, 'runtime.long-gone', '{}', 'dispatched', now())`,
      [old, ws, QUEUE],
    );
    await queue.add(
      'runtime.long-gone',
      { v: 1, workspaceId: ws, payload: {}, createdAt: Date.now() },
      { jobId: old, attempts: 3, timestamp: Date.now() - 2 * 86_400_000 },
    );
    const failed = await waitFor('old unknown job failed', async () => {
      const j = await queue.getJob(old);
      return j?.failedReason ? j : undefined;
    });
    expect(failed.failedReason).toMatch(/no handler for job runtime.long-gone/);
    expect(failed.attemptsMade).toBe(1);
    const { rows } = await t.owner.query(
      `select status, attempt_count, last_error from outbox_events where id = $1`,
      [old],
    );
    expect(rows[0]).toMatchObject({ status: 'dead_letter', attempt_count: 1 });
    expect(rows[0].last_error).toMatch(/no handler for job runtime.long-gone/);
  });

  it('a job in a newer envelope version waits for a worker that reads it; a damaged one is dead-lettered', async () => {
    // A newer dispatcher's job during a rolling upgrade: delayed, as an unknown type is, not poison.
    const id = randomUUID();
    await queue.add(
      counterJob.name,
      { v: 2, workspaceId: ws, body: { counter: 'c2' }, createdAt: Date.now() },
      { jobId: id, attempts: 3 },
    );
    const delayed = await jobInState(queue, id, 'delayed');
    expect(delayed.failedReason).toBeFalsy();
    expect(delayed.attemptsMade).toBe(0);
    await delayed.remove();

    /** An event of counterJob as the dispatcher leaves it once its job is added. */
    const dispatched = async (counter: string) => {
      const eventId = randomUUID();
      await t.owner.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload, status, dispatched_at)
         values ($1, $2, $3, $4, $5, 'dispatched', now())`,
        [eventId, ws, QUEUE, counterJob.name, { counter }],
      );
      return eventId;
    };
    // Nobody has read it for a day: it fails for good, and its event (still there) is dead-lettered.
    const old = await dispatched('c2');
    await queue.add(
      counterJob.name,
      { v: 2, workspaceId: ws, body: { counter: 'c2' }, createdAt: Date.now() },
      { jobId: old, attempts: 3, timestamp: Date.now() - 2 * 86_400_000 },
    );
    // And one that is no envelope of any version, but names its workspace: poison, dead-lettered.
    const damaged = await dispatched('c3');
    await queue.add(
      counterJob.name,
      { workspaceId: ws, payload: 'not an object' },
      { jobId: damaged, attempts: 3 },
    );
    for (const [jobId, reason] of [
      [old, /envelope of version 2, newer than this worker reads/],
      [damaged, /is not an outbox event envelope/],
    ] as const) {
      const failed = await waitFor(`job ${jobId} failed`, async () => {
        const j = await queue.getJob(jobId);
        return j?.failedReason ? j : undefined;
      });
      expect(failed.failedReason).toMatch(reason);
      expect(failed.attemptsMade).toBe(1);
      const { rows } = await t.owner.query(
        `select status, payload, last_error from outbox_events where id = $1`,
        [jobId],
      );
      // The row keeps its own payload: the dead letter can be retried once a worker reads it.
      expect(rows[0]).toMatchObject({
        status: 'dead_letter',
        payload: { counter: jobId === old ? 'c2' : 'c3' },
      });
      expect(rows[0].last_error).toMatch(reason);
    }
  });

  /** Runs one event of a single-attempt job whose handler throws; what BullMQ and the row keep. */
  const failOnce = async (queueName: string, handler: () => Promise<unknown>) => {
    const job = defineJob({
      name: `${queueName}.job`,
      queue: queueName,
      schema: z.object({}),
      maxAttempts: 1,
    });
    const local = new OutboxWorkerRuntime({
      db: t.agentDb,
      registry: new JobRegistry().handle(job, handler),
      redis: t.info.redis,
      prefix: t.info.bullPrefix,
    });
    await local.start();
    const q = new Queue(queueName, { connection: redis, prefix: t.info.bullPrefix });
    try {
      const id = randomUUID();
      await t.owner.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload, max_attempts) values ($1, $2, $3, $4, '{}', 1)`,
        [id, ws, queueName, job.name],
      );
      await dispatch();
      const failed = await waitFor('the job to fail', async () => {
        const j = await q.getJob(id);
        return j?.failedReason ? j : undefined;
      });
      const { rows } = await t.owner.query(`select status, last_error from outbox_events where id = $1`, [
        id,
      ]);
      expect(rows[0].status).toBe('dead_letter');
      return {
        kept: JSON.stringify({ reason: failed.failedReason, stack: failed.stacktrace }),
        lastError: rows[0].last_error as string,
      };
    } finally {
      await local.close();
      await q.close();
    }
  };

  it('what BullMQ keeps of a failure (reason and stack trace, shown by the queue dashboard) is redacted', async () => {
    const { kept, lastError } = await failOnce('q-runtime-leaky', async () => {
      throw new Error(
        'provider rejected: password=hunter2 GET https://bucket.example/o?X-Amz-Signature=abc123',
      );
    });
    expect(kept).toContain('provider rejected: password=[REDACTED]');
    expect(kept).toMatch(/at .*worker-runtime\.integration-spec/); // the frames are still there
    for (const secret of ['hunter2', 'abc123', 'X-Amz-Signature']) expect(kept).not.toContain(secret);
    expect(lastError).not.toMatch(/hunter2|abc123/);
  });

  it("a failed query is described by the driver's error, never by its SQL text and bind parameters", async () => {
    const secret = `bound-value-${randomUUID()}`;
    const { kept, lastError } = await failOnce('q-runtime-query', async () => {
      const id = randomUUID();
      // Two identical rows in one statement: a unique violation whose message names no value.
      await t.agentDb.withWorkspace(ws, () =>
        t.agentDb.executor.execute(sql`
          insert into outbox_inbox (workspace_id, handler, event_id)
          values (app_current_workspace(), ${secret}, ${id}), (app_current_workspace(), ${secret}, ${id})`),
      );
    });
    expect(lastError).toContain('23505'); // the SQLSTATE
    for (const text of [kept, lastError]) {
      expect(text).toContain('outbox_inbox_pkey');
      expect(text).not.toContain(secret);
      expect(text).not.toMatch(/insert into|params:/i);
    }
  });

  it('a job whose worker died mid-run too often is dead-lettered, not left dispatched', async () => {
    const stuckJob = defineJob({
      name: 'runtime.stuck',
      queue: 'q-stuck',
      schema: z.object({}),
      maxAttempts: 5,
    });
    const options = {
      redis: t.info.redis,
      prefix: t.info.bullPrefix,
      lockDurationMs: 500,
      stalledIntervalMs: 300,
      maxStalledCount: 0,
    };
    const id = randomUUID();
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload) values ($1, $2, 'q-stuck', $3, '{}')`,
      [id, ws, stuckJob.name],
    );
    // The worker "dies": its connections drop without finishing or releasing the job.
    const { release } = await stallJob(t.agentDb, options, stuckJob, dispatch);
    const rescuer = new OutboxWorkerRuntime({
      ...options,
      db: t.agentDb,
      registry: new JobRegistry().handle(stuckJob, async () => null),
    });
    await rescuer.start();
    try {
      const row = await waitFor('the event to be dead-lettered', async () => {
        const { rows } = await t.owner.query(`select status, last_error from outbox_events where id = $1`, [
          id,
        ]);
        return rows[0]?.status === 'dead_letter' ? rows[0] : undefined;
      });
      expect(row.last_error).toMatch(/stalled/);
    } finally {
      release(); // let the orphaned handler end so its pooled connection comes back
      await rescuer.close();
    }
  });
});
