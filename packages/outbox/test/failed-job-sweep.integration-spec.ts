import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { z } from 'zod';
import {
  connectBullmqRedis,
  defineJob,
  FailedJobSweep,
  JobRegistry,
  OutboxDispatcher,
  OutboxWorkerRuntime,
  QueueProducer,
  type RedisClient,
} from '../src';
import { connectedRedis, insertEvents, waitFor } from './helpers';

const t = useTestDatabase();

/**
 * Events whose job BullMQ failed for good without the worker's dead letter. Here a plain BullMQ
 * worker fails the jobs (an UnrecoverableError, no outbox runtime): the state a worker leaves when
 * it stops between BullMQ failing a stalled job and its dead-letter write.
 */
describe('FailedJobSweep (real PostgreSQL and Redis)', () => {
  let redis: RedisClient;
  let producer: QueueProducer;
  let prefix: string;
  let n = 0;

  beforeAll(async () => {
    redis = await connectedRedis(t.info.redis);
  });
  afterAll(async () => {
    await redis.quit();
  });
  beforeEach(() => {
    prefix = `${t.info.bullPrefix}-failed${++n}`;
    // Handler retries 1 ms apart, so a job with two attempts fails for good at once.
    producer = new QueueProducer(redis, prefix, {
      completedAgeSec: 3600,
      failedAgeSec: 3600,
      handlerBackoffMs: 1,
    });
  });
  afterEach(async () => {
    await producer.close();
  });

  /**
   * Dispatches the pending events, then fails every job of `queue` for good, outside the outbox
   * runtime: each attempt throws, and attempts run out (the events' max_attempts).
   */
  async function dispatchAndFail(queue: string, count: number): Promise<void> {
    await new OutboxDispatcher({ db: t.agentDb, producer }).drain();
    const connection = connectBullmqRedis(t.info.redis);
    const worker = new Worker(
      queue,
      async () => {
        throw new Error('vendor said no: token=s3cr3t-t0ken-value');
      },
      { connection, prefix },
    );
    const q = new Queue(queue, { connection: redis, prefix });
    await waitFor(`${count} jobs failed`, async () => (await q.getJobCountByTypes('failed')) === count);
    await q.close();
    await worker.close();
    connection.disconnect();
  }

  const statuses = async (ids: readonly string[]) =>
    (
      await t.owner.query<{ id: string; status: string; last_error: string | null; attempt_count: number }>(
        `select id, status, last_error, attempt_count from outbox_events where id = any($1::uuid[]) order by id`,
        [ids],
      )
    ).rows;

  it('dead-letters dispatched events whose job failed, with a redacted error, and leaves the others alone', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const [stranded, alreadyDead, retried, redispatched] = await insertEvents(t.owner, ws, 4, {
      queue: 'q-failed',
      maxAttempts: 2,
    });
    // A system job (not an outbox event) fails in the same queue.
    const system = new Queue('q-failed', { connection: redis, prefix });
    await system.add('outbox.retention', {}, { jobId: 'retention-1' });
    await system.close();
    await dispatchAndFail('q-failed', 5);
    // One was dead-lettered by its worker as usual, one is pending again (an operator's retry).
    await t.owner.query(
      `update outbox_events set status = 'dead_letter', last_error = 'by the worker' where id = $1`,
      [alreadyDead],
    );
    await t.owner.query(`update outbox_events set status = 'pending', dispatched_at = null where id = $1`, [
      retried,
    ]);
    // And one was dispatched again, with a new job, after the sweep read the failed set: a dispatch
    // later than the database's clock at the read (its old failed job is not its current job).
    await t.owner.query(`update outbox_events set dispatched_at = now() + interval '1 hour' where id = $1`, [
      redispatched,
    ]);

    const sweep = new FailedJobSweep({ db: t.agentDb, redis, prefix, queues: ['q-failed'] });
    expect(await sweep.run()).toBe(1);
    const rows = await statuses([stranded!, alreadyDead!, retried!, redispatched!]);
    const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
    expect(byId[stranded!]!.status).toBe('dead_letter');
    expect(byId[stranded!]!.attempt_count).toBe(2); // BullMQ's attempts made
    expect(byId[stranded!]!.last_error).toMatch(
      /without its dead letter: vendor said no: token=\[REDACTED\]/,
    );
    expect(byId[stranded!]!.last_error).not.toContain('s3cr3t');
    expect(byId[alreadyDead!]).toMatchObject({ status: 'dead_letter', last_error: 'by the worker' });
    expect(byId[retried!]!.status).toBe('pending');
    expect(byId[redispatched!]!.status).toBe('dispatched');
    expect(await sweep.run()).toBe(0);
  });

  it("writes the dead letter again for a failed job whose row is gone, trace context kept; a deleted workspace's jobs are skipped", async () => {
    // What a retention shorter than the job's life leaves, when BullMQ failed the job by itself.
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const gone = (await seedWorkspace(t.owner)).workspaceId;
    const [deleted] = await insertEvents(t.owner, ws, 1, {
      queue: 'q-failed-gone',
      type: 'gone.event',
      maxAttempts: 2,
    });
    const [orphan] = await insertEvents(t.owner, gone, 1, { queue: 'q-failed-gone', maxAttempts: 2 });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await t.owner.query(`update outbox_events set traceparent = $2, tracestate = 'vendor=1' where id = $1`, [
      deleted,
      traceparent,
    ]);
    const before = (
      await t.owner.query<{ payload: unknown; created_at: Date }>(
        `select payload, created_at from outbox_events where id = $1`,
        [deleted],
      )
    ).rows[0]!;
    await dispatchAndFail('q-failed-gone', 2);
    await t.owner.query(`delete from outbox_events where id = $1`, [deleted]);
    await t.owner.query(`delete from workspaces where id = $1`, [gone]);

    const sweep = new FailedJobSweep({ db: t.agentDb, redis, prefix, queues: ['q-failed-gone'] });
    expect(await sweep.run()).toBe(1);
    const { rows } = await t.owner.query(
      `select workspace_id, queue, event_type, payload, status, attempt_count, max_attempts, last_error,
              created_at, dispatched_at, dead_letter_handled_at, traceparent, tracestate
         from outbox_events where id = any($1::uuid[])`,
      [[deleted, orphan]],
    );
    expect(rows).toEqual([
      {
        workspace_id: ws,
        queue: 'q-failed-gone',
        event_type: 'gone.event',
        payload: before.payload,
        status: 'dead_letter',
        attempt_count: 2,
        max_attempts: 2,
        last_error: expect.stringMatching(/without its dead letter: vendor said no: token=\[REDACTED\]/),
        created_at: before.created_at,
        dispatched_at: null,
        dead_letter_handled_at: null, // the reaction is still to run
        traceparent,
        tracestate: 'vendor=1',
      },
    ]);
    // The deleted workspace's job did not hold the sweep up: it completed, and reads nothing again.
    expect(await redis.get(`${prefix}:outbox:failed-swept-until:q-failed-gone`)).toBeTruthy();
    expect(await sweep.run()).toBe(0);
  });

  it('reads a newer envelope version as far as it can: the workspace is enough to write the dead letter', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const id = randomUUID();
    const timestamp = Date.UTC(2026, 0, 2);
    // As a worker that died after BullMQ failed a newer dispatcher's job leaves it; its row is gone.
    await redis.hset(`${prefix}:q-failed-newer:${id}`, {
      name: 'newer.event',
      data: JSON.stringify({ v: 2, workspaceId: ws, body: { n: 1 } }),
      opts: JSON.stringify({ attempts: 4 }),
      timestamp: String(timestamp),
      failedReason: 'job stalled more than allowable limit',
      atm: '4',
    });
    await redis.zadd(`${prefix}:q-failed-newer:failed`, Date.now(), id);
    const sweep = new FailedJobSweep({ db: t.agentDb, redis, prefix, queues: ['q-failed-newer'] });
    expect(await sweep.run()).toBe(1);
    const { rows } = await t.owner.query(
      `select workspace_id, event_type, payload, status, attempt_count, max_attempts, created_at
         from outbox_events where id = $1`,
      [id],
    );
    expect(rows).toEqual([
      {
        workspace_id: ws,
        event_type: 'newer.event',
        payload: {}, // not readable in this version
        status: 'dead_letter',
        attempt_count: 4,
        max_attempts: 4,
        created_at: new Date(timestamp), // the job's, for want of the envelope's
      },
    ]);
  });

  it('two sweeps at once (two workers starting) write each dead letter once', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const ids = await insertEvents(t.owner, ws, 6, { queue: 'q-failed-twice', maxAttempts: 1 });
    await dispatchAndFail('q-failed-twice', 6);
    const gone = ids.slice(0, 3);
    await t.owner.query('delete from outbox_events where id = any($1::uuid[])', [gone]);
    const sweep = () => new FailedJobSweep({ db: t.agentDb, redis, prefix, queues: ['q-failed-twice'] });
    const counts = await Promise.all([sweep().run(), sweep().run()]);
    expect(counts[0]! + counts[1]!).toBe(6); // each event counted by the sweep that wrote it
    const rows = await statuses(ids);
    expect(rows.map((r) => r.status)).toEqual(Array(6).fill('dead_letter'));
  });

  it('writes the dead letter again when retention deletes the row while the sweep runs', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const [purged] = await insertEvents(t.owner, ws, 1, { queue: 'q-failed-purged', maxAttempts: 1 });
    await dispatchAndFail('q-failed-purged', 1);
    // The purge has deleted the row and not committed yet when the sweep's statement starts.
    const purge = await t.owner.connect();
    let committed = false;
    try {
      await purge.query('begin');
      await purge.query('delete from outbox_events where id = $1', [purged]);
      const sweep = new FailedJobSweep({ db: t.agentDb, redis, prefix, queues: ['q-failed-purged'] });
      let done = false;
      const swept = sweep.run().finally(() => (done = true));
      await waitFor('the sweep waiting on the purge', async () => {
        if (done) throw new Error(`the sweep did not wait for the purge: ${await swept}`);
        // pg_locks, not pg_stat_activity: the owner role may not see the agent's backends there.
        const { rows } = await t.owner.query(`select 1 from pg_locks where not granted`);
        return rows.length > 0;
      });
      await purge.query('commit');
      committed = true;
      expect(await swept).toBe(1);
    } finally {
      if (!committed) await purge.query('rollback'); // never leave the sweep waiting on a lock
      purge.release();
    }
    expect((await statuses([purged!]))[0]).toMatchObject({ status: 'dead_letter' });
  });

  it('skips, event by event, a failed job whose data PostgreSQL refuses, and writes the others', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    /** A failed job whose row is gone, as a worker that died after BullMQ failed it leaves it. */
    const failedJob = async (payload: Record<string, unknown>) => {
      const jobId = randomUUID();
      await redis.hset(`${prefix}:q-failed-refused:${jobId}`, {
        name: 'refused.event',
        data: JSON.stringify({ v: 1, workspaceId: ws, payload, createdAt: Date.now() }),
        failedReason: 'job stalled more than allowable limit',
        atm: '1',
      });
      await redis.zadd(`${prefix}:q-failed-refused:failed`, Date.now(), jobId);
      return jobId;
    };
    const refused = await failedJob({ note: 'nul \u0000 inside' }); // jsonb holds no \u0000 (22P05)
    const fine = await failedJob({ note: 'fine' });
    const sweep = new FailedJobSweep({ db: t.agentDb, redis, prefix, queues: ['q-failed-refused'] });
    expect(await sweep.run()).toBe(1);
    const { rows } = await t.owner.query(`select id, payload from outbox_events where id = any($1::uuid[])`, [
      [refused, fine],
    ]);
    expect(rows).toEqual([{ id: fine, payload: { note: 'fine' } }]);
    // Not read again and again: the sweep completed.
    expect(await redis.get(`${prefix}:outbox:failed-swept-until:q-failed-refused`)).toBeTruthy();
  });

  it('pages through a failed set larger than a page, also where many jobs failed in the same millisecond', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const ids = await insertEvents(t.owner, ws, 23, { queue: 'q-failed-many' });
    await dispatchAndFail('q-failed-many', 23);
    // Fifteen of them with one finish time: more than a page of equal scores.
    const failedKey = `${prefix}:q-failed-many:failed`;
    for (const id of ids.slice(0, 15)) await redis.zadd(failedKey, 1000, id);
    const sweep = new FailedJobSweep({
      db: t.agentDb,
      redis,
      prefix,
      queues: ['q-failed-many'],
      pageSize: 4,
    });
    expect(await sweep.run()).toBe(23);
    expect((await statuses(ids)).every((r) => r.status === 'dead_letter')).toBe(true);
  });

  it('keeps a high-water mark per queue: a new worker reads only what failed since the last complete sweep', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const [first, second] = await insertEvents(t.owner, ws, 2, { queue: 'q-failed-mark', maxAttempts: 1 });
    await t.owner.query(
      `update outbox_events set next_attempt_at = now() + interval '1 hour' where id = $1`,
      [second],
    );
    await dispatchAndFail('q-failed-mark', 1);
    const sweep = () => new FailedJobSweep({ db: t.agentDb, redis, prefix, queues: ['q-failed-mark'] });
    expect(await sweep().run()).toBe(1);
    const mark = Number(await redis.get(`${prefix}:outbox:failed-swept-until:q-failed-mark`));
    expect(mark).toBeGreaterThan(0);
    // Long before the mark (less the clock margin): a new sweep does not read it again.
    const failedKey = `${prefix}:q-failed-mark:failed`;
    await t.owner.query(`update outbox_events set status = 'dispatched' where id = $1`, [first]);
    await redis.zadd(failedKey, mark - 120_000, first!);
    expect(await sweep().run()).toBe(0);
    expect((await statuses([first!]))[0]!.status).toBe('dispatched');
    // What fails afterwards is read.
    await t.owner.query(`update outbox_events set next_attempt_at = now() where id = $1`, [second]);
    await dispatchAndFail('q-failed-mark', 2);
    expect(await sweep().run()).toBe(1);
    expect((await statuses([second!]))[0]!.status).toBe('dead_letter');
  });

  it('a running worker runtime sweeps periodically, not only at start', async () => {
    const ws = (await seedWorkspace(t.owner)).workspaceId;
    const job = defineJob({ name: 'failed.periodic', queue: 'q-failed-periodic', schema: z.object({}) });
    const runtime = new OutboxWorkerRuntime({
      db: t.agentDb,
      registry: new JobRegistry().handle(job, async () => null),
      redis: t.info.redis,
      prefix,
      failedSweepIntervalMs: 100,
    });
    await runtime.start();
    try {
      // The sweep at start is over once it has recorded its high-water mark (no mark before: a
      // fresh prefix); a job injected before that could be its catch, not a periodic sweep's.
      const markKey = `${prefix}:outbox:failed-swept-until:q-failed-periodic`;
      await waitFor('the sweep at start', () => redis.get(markKey));
      // Its own workers would run a new job: this one lands in the failed set the way a worker that
      // died after BullMQ failed it leaves it (the fields the sweep reads, as BullMQ writes them).
      const id = randomUUID();
      await t.owner.query(
        `insert into outbox_events (id, workspace_id, queue, event_type, payload, status, dispatched_at)
         values ($1, $2, 'q-failed-periodic', $3, '{}', 'dispatched', now())`,
        [id, ws, job.name],
      );
      await redis.hset(`${prefix}:q-failed-periodic:${id}`, {
        name: job.name,
        data: JSON.stringify({ v: 1, workspaceId: ws, payload: {}, createdAt: Date.now() }),
        failedReason: 'job stalled more than allowable limit',
        atm: '1',
      });
      await redis.zadd(`${prefix}:q-failed-periodic:failed`, Date.now(), id);
      await waitFor('the periodic sweep', async () => (await statuses([id]))[0]!.status === 'dead_letter');
    } finally {
      await runtime.close();
    }
  });
});
