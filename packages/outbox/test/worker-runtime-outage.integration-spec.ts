import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Database, sql } from '@listing/db';
import { CuttableProxy, freeTcpPort, seedWorkspace, useTestDatabase } from '@listing/testing';
import { z } from 'zod';
import {
  DEFAULT_MAX_ATTEMPTS,
  defineJob,
  JobRegistry,
  OutboxDispatcher,
  OutboxHandler,
  OutboxWorkerRuntime,
  QueueProducer,
  type OutboxLogger,
  type RedisClient,
} from '../src';
import { connectedRedis, createCounterTable, jobInState, stallJob, waitFor } from './helpers';

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

/** Its single attempt fails, and the database goes away with it (the first time only). */
const lastAttemptJob = defineJob({
  name: 'outage.last-attempt',
  queue: QUEUE,
  schema: z.object({}),
  maxAttempts: 1,
  transaction: false,
  inbox: false,
});

/** Its single attempt fails, and writing its dead letter ends the writer's own connection. */
const deadLetterKillsJob = defineJob({
  name: 'outage.dead-letter-kills',
  queue: QUEUE,
  schema: z.object({}),
  maxAttempts: 1,
  transaction: false,
  inbox: false,
});
const KILLS_ITS_WRITER = 'this failure ends the connection that records it';

/** Its first try loses the database and sees it back before it fails (an outage just ending). */
const outageEndsJob = defineJob({
  name: 'outage.ends',
  queue: QUEUE,
  schema: z.object({}),
  maxAttempts: 1,
  transaction: false,
  inbox: false,
});

/** Its work ends its own connection on every try (as a server timeout it trips would). */
const selfTerminatingJob = defineJob({
  name: 'outage.self-terminating',
  queue: QUEUE,
  schema: z.object({}),
  maxAttempts: 2,
});

/**
 * What the runtimes of this file log: each try they make against the cut database is a line
 * naming the event, so a test can wait until the path under test has actually run (a fixed sleep
 * on a loaded machine may end before the worker tried at all, and `attemptsMade 0` would prove
 * nothing).
 */
const logged: Array<{ msg: string; event: unknown }> = [];
const record = (msg: string, fields?: Record<string, unknown>) => logged.push({ msg, event: fields?.event });
const logger: OutboxLogger = { info: record, warn: record, error: record };
const BACK_IN_QUEUE = 'database unreachable: job back in its queue, no attempt counted';
const DEAD_LETTER_FAILED = 'could not dead-letter the outbox event';
const COUNTED = 'the job lost its own connection again while the database answers: attempt counted';
const tries = (msg: string, event: string) => logged.filter((l) => l.msg === msg && l.event === event).length;

class CountHandlers {
  cutOnFailure: (() => Promise<void>) | null = null;
  /** Cuts the database and opens it again around a query of the handler's, on its first try. */
  outageAroundQuery: { cut: () => Promise<void>; open: () => Promise<void> } | null = null;
  outageEndsTries = 0;
  selfTerminatingTries = 0;

  constructor(private readonly db: Database) {}

  @OutboxHandler(selfTerminatingJob)
  async selfTerminating() {
    this.selfTerminatingTries++;
    await this.db.executor.execute(sql`select pg_terminate_backend(pg_backend_pid())`);
    return { survived: true };
  }

  @OutboxHandler(lastAttemptJob)
  async lastAttempt() {
    const cut = this.cutOnFailure;
    this.cutOnFailure = null;
    await cut?.();
    throw new Error('the marketplace said no');
  }

  @OutboxHandler(outageEndsJob)
  async outageEnds() {
    this.outageEndsTries++;
    const outage = this.outageAroundQuery;
    this.outageAroundQuery = null;
    if (!outage) return { ran: true };
    await outage.cut();
    const failed = await this.db.executor.execute(sql`select 1`).then(
      () => null,
      (error: unknown) => error,
    );
    await outage.open(); // back before the error reaches the runtime, whose probe now succeeds
    throw failed ?? new Error('the query went through the cut proxy');
  }

  @OutboxHandler(deadLetterKillsJob)
  async deadLetterKills() {
    throw new Error(KILLS_ITS_WRITER);
  }

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
  let redis: RedisClient;
  let producer: QueueProducer;
  let runtime: OutboxWorkerRuntime;
  let handlers: CountHandlers;
  let queue: Queue;
  let ws: string;

  beforeAll(async () => {
    await createCounterTable(t.owner, 'outage_counters');
    ws = (await seedWorkspace(t.owner)).workspaceId;
    const target = new URL(t.info.agentUrl);
    proxy = new CuttableProxy(await freeTcpPort(), {
      host: target.hostname,
      port: Number(target.port || 5432),
    });
    await proxy.open();
    workerDb = new Database({ connectionString: proxy.urlThrough(t.info.agentUrl), max: 4 });
    redis = await connectedRedis(t.info.redis);
    producer = new QueueProducer(redis, t.info.bullPrefix, {
      completedAgeSec: 3600,
      failedAgeSec: 3600,
      handlerBackoffMs: 10,
    });
    runtime = new OutboxWorkerRuntime({
      db: workerDb,
      registry: new JobRegistry().registerHandlers((handlers = new CountHandlers(workerDb))),
      redis: t.info.redis,
      prefix: t.info.bullPrefix,
      concurrency: 2,
      databaseRetryMs: 200,
      connectionLossPutBacks: 2,
      logger,
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

  /** An outbox event for `job`, as a committed business write leaves it: pending, not yet dispatched. */
  async function insertEvent(
    job: { name: string; queue: string; maxAttempts?: number },
    payload: Record<string, unknown> = {},
  ) {
    const id = randomUUID();
    await t.owner.query(
      `insert into outbox_events (id, workspace_id, queue, event_type, payload, max_attempts) values ($1, $2, $3, $4, $5, $6)`,
      [id, ws, job.queue, job.name, JSON.stringify(payload), job.maxAttempts ?? DEFAULT_MAX_ATTEMPTS],
    );
    return id;
  }

  const eventRow = async (id: string) =>
    (await t.owner.query(`select status, attempt_count, last_error from outbox_events where id = $1`, [id]))
      .rows[0];

  const deadLettered = (id: string) =>
    waitFor('the event to be dead-lettered', async () => {
      const row = await eventRow(id);
      return row.status === 'dead_letter' ? row : undefined;
    });

  it('returns the job to its queue without counting an attempt, and runs it once the database is back', async () => {
    await t.owner.query(`insert into outage_counters (workspace_id, name) values ($1, 'c')`, [ws]);
    const id = await insertEvent(countJob, { counter: 'c' });
    await proxy.cut();
    await new OutboxDispatcher({ db: t.agentDb, producer }).drain(); // the dispatcher's database is fine
    // More tries than the job has attempts (two, 10 ms apart), each put back uncounted.
    await waitFor('three tries against the cut database', async () => tries(BACK_IN_QUEUE, id) >= 3);
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
    expect(await eventRow(id)).toMatchObject({ status: 'dispatched', attempt_count: 0 });
  });

  it('a try whose database failed and came back before its error was judged goes back uncounted', async () => {
    const id = await insertEvent(outageEndsJob);
    handlers.outageEndsTries = 0;
    handlers.outageAroundQuery = { cut: () => proxy.cut(), open: () => proxy.open() };
    try {
      await new OutboxDispatcher({ db: t.agentDb, producer }).drain();
      const done = await waitFor('the job to finish', async () => {
        const j = await queue.getJob(id);
        return j?.finishedOn ? j : undefined;
      });
      // Judged by a probe alone, the error (the database is back by then) counted the only
      // attempt: the event was dead-lettered without ever having run.
      expect(done.failedReason).toBeFalsy();
      expect(done.returnvalue).toEqual({ duplicate: false, result: { ran: true } });
      expect(handlers.outageEndsTries).toBe(2);
      expect(tries(BACK_IN_QUEUE, id)).toBe(1);
      expect(await eventRow(id)).toMatchObject({ status: 'dispatched', attempt_count: 0 });
    } finally {
      handlers.outageAroundQuery = null;
      await proxy.open().catch(() => undefined);
    }
  });

  it('a job whose own work ends its connection on every try, the database answering, counts its attempts after a few put-backs', async () => {
    const id = await insertEvent(selfTerminatingJob);
    handlers.selfTerminatingTries = 0;
    await new OutboxDispatcher({ db: t.agentDb, producer }).drain();
    // Uncounted without a bound, it went back to its queue every time and never ended.
    const row = await deadLettered(id);
    expect(row.last_error).toMatch(/terminating connection/);
    const job = await jobInState(queue, id, 'failed');
    expect(job.attemptsMade).toBe(2);
    if (!t.info.pooled) {
      // Two put-backs (connectionLossPutBacks), then each of the two attempts counted.
      expect(tries(BACK_IN_QUEUE, id)).toBe(2);
      expect(tries(COUNTED, id)).toBe(2);
      expect(handlers.selfTerminatingTries).toBe(4);
    } else {
      // Behind a transaction pooler the client's connection may outlive the server it lost, and
      // the pooler's own report of the loss may reach the next try's first statement: a try
      // whose loss the worker cannot see is judged by the probe alone and counted at once. Still
      // at most two put-backs, and the attempts end.
      expect(tries(BACK_IN_QUEUE, id)).toBeLessThanOrEqual(2);
      expect(handlers.selfTerminatingTries).toBeGreaterThanOrEqual(1);
      expect(handlers.selfTerminatingTries).toBeLessThanOrEqual(4);
    }
  });

  it('a last attempt whose dead-letter write ends its own connection, the database answering, fails after a few put-backs', async () => {
    // Unbounded, the write went back to the queue forever, pausing the queue each time.
    await t.owner.query(`
      create function kill_dead_letter_writer() returns trigger language plpgsql as $$
      begin
        if new.last_error like '%${KILLS_ITS_WRITER}%' then perform pg_terminate_backend(pg_backend_pid()); end if;
        return new;
      end $$;
      create trigger kill_dead_letter_writer before insert or update on outbox_events
        for each row execute function kill_dead_letter_writer();`);
    try {
      const id = await insertEvent(deadLetterKillsJob);
      await new OutboxDispatcher({ db: t.agentDb, producer }).drain();
      const job = await jobInState(queue, id, 'failed');
      expect(job.attemptsMade).toBe(1);
      expect(job.failedReason).toMatch(KILLS_ITS_WRITER);
      if (!t.info.pooled)
        expect(tries(BACK_IN_QUEUE, id)).toBe(2); // connectionLossPutBacks
      else expect(tries(BACK_IN_QUEUE, id)).toBeLessThanOrEqual(2); // see the test above
      // Not written: the failed-job sweep dead-letters it later (its own test).
      expect((await eventRow(id)).status).toBe('dispatched');
    } finally {
      await t.owner.query(
        'drop trigger kill_dead_letter_writer on outbox_events; drop function kill_dead_letter_writer()',
      );
    }
  });

  /** The runtime's log lines about the event, its job and its row, for a wait that timed out. */
  const diagnosis = async (id: string) => {
    const job = await queue.getJob(id);
    const event = await eventRow(id);
    return JSON.stringify({
      proxyOpen: proxy.isOpen,
      log: logged.filter((l) => l.event === id).map((l) => l.msg),
      job: job && {
        state: await job.getState(),
        attemptsMade: job.attemptsMade,
        failedReason: job.failedReason,
      },
      event,
    });
  };

  it('a last attempt whose dead-letter write finds the database gone goes back uncounted, and is dead-lettered once it returns', async () => {
    const id = await insertEvent(lastAttemptJob);
    handlers.cutOnFailure = () => proxy.cut();
    try {
      await new OutboxDispatcher({ db: t.agentDb, producer }).drain();
      await waitFor('the handler to have run', async () => handlers.cutOnFailure === null);
      // Its failed dead-letter write put it back, and the retry (the handler fails again) too.
      await waitFor('two tries put back uncounted', async () => tries(BACK_IN_QUEUE, id) >= 2);
      expect(tries(DEAD_LETTER_FAILED, id)).toBeGreaterThanOrEqual(2);
      const during = (await queue.getJob(id))!;
      expect(await during.getState()).not.toBe('failed'); // failed now, the event would be stranded
      expect(during.attemptsMade).toBe(0);
    } finally {
      handlers.cutOnFailure = null;
      await proxy.open().catch(() => undefined); // still open if the handler never ran
    }
    const row = await deadLettered(id).catch(async (error: Error) => {
      // Seen once in a few hundred runs on a loaded machine, unexplained: say what the worker did.
      throw new Error(`${error.message}: ${await diagnosis(id)}`);
    });
    expect(row.last_error).toMatch(/the marketplace said no/);
    // The dead-letter write commits before BullMQ records the failure.
    const job = await jobInState(queue, id, 'failed');
    expect(job.attemptsMade).toBe(1);
  });

  /**
   * A job whose worker died mid-run, then BullMQ failing it for stalling (maxStalledCount 0) in a
   * second runtime, the rescuer, whose database is cut: its dead-letter write cannot happen.
   * `runtime()` builds another runtime for the same job; `cleanUp()` reopens the proxy, lets the
   * orphaned handler end and closes what is left.
   */
  async function strandStalledJob(queueName: string) {
    const stuckJob = defineJob({ name: `${queueName}.job`, queue: queueName, schema: z.object({}) });
    const options = {
      redis: t.info.redis,
      prefix: t.info.bullPrefix,
      lockDurationMs: 500,
      stalledIntervalMs: 300,
      maxStalledCount: 0,
      databaseRetryMs: 100,
      logger,
    };
    const runtime = () =>
      new OutboxWorkerRuntime({
        ...options,
        db: workerDb,
        registry: new JobRegistry().handle(stuckJob, async () => null),
      });
    const id = await insertEvent(stuckJob);
    const { release } = await stallJob(t.agentDb, options, stuckJob, () =>
      new OutboxDispatcher({ db: t.agentDb, producer }).drain(),
    );
    await proxy.cut();
    const rescuer = runtime();
    await rescuer.start();
    const stuck = new Queue(queueName, { connection: redis, prefix: t.info.bullPrefix });
    const cleanUp = async () => {
      await proxy.open().catch(() => undefined); // already open unless the test failed early
      release(); // let the orphaned handler end so its pooled connection comes back
      await rescuer.close();
      await stuck.close();
    };
    try {
      await waitFor('BullMQ to fail the stalled job', async () => (await stuck.getJob(id))?.failedReason);
    } catch (error) {
      await cleanUp();
      throw error;
    }
    return { id, rescuer, runtime, cleanUp };
  }

  it('a job BullMQ fails for stalling while the database is gone is dead-lettered once it returns', async () => {
    const { id, cleanUp } = await strandStalledJob('q-outage-stuck');
    try {
      await waitFor(
        'a few dead-letter tries against the cut proxy',
        async () => tries(DEAD_LETTER_FAILED, id) >= 3,
      );
      expect((await eventRow(id)).status).toBe('dispatched');
      await proxy.open();
      const row = await deadLettered(id);
      expect(row.last_error).toMatch(/stalled/);
    } finally {
      await cleanUp();
    }
  });

  it('a stalled job failed while the database is gone, whose worker then stops, is dead-lettered by the next worker to start', async () => {
    const { id, rescuer, runtime, cleanUp } = await strandStalledJob('q-outage-orphan');
    try {
      await waitFor('the rescuer to try its dead letter', async () => tries(DEAD_LETTER_FAILED, id) >= 1);
      await rescuer.close(); // stops before the database is back: its dead-letter retries end with it
      await proxy.open();
      // A window for a retry that outlived close() (they come 100 ms apart): a lower bound, nothing
      // is awaited because nothing should happen.
      await new Promise((r) => setTimeout(r, 300));
      expect((await eventRow(id)).status).toBe('dispatched'); // stranded: nobody is working on it

      const next = runtime();
      await next.start();
      try {
        const row = await waitFor('the next worker to dead-letter it', async () => {
          const r = await eventRow(id);
          return r.status === 'dead_letter' ? r : undefined;
        });
        expect(row.last_error).toMatch(/without its dead letter.*stalled/);
      } finally {
        await next.close();
      }
    } finally {
      await cleanUp();
    }
  });

  it('a provider refusing connections (the database answering) still counts attempts and dead-letters', async () => {
    const id = await insertEvent(providerJob);
    await new OutboxDispatcher({ db: t.agentDb, producer }).drain();
    await deadLettered(id);
    // The dead-letter write commits before BullMQ records the failure.
    const job = await jobInState(queue, id, 'failed');
    expect(job.attemptsMade).toBe(2);
  });
});
