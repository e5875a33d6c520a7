import { performance } from 'node:perf_hooks';
import { isDatabaseUnavailable, PgErrorCode, pgErrorCode, type Database } from '@listing/db';
import { DelayedError, Queue, RateLimitError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { ConnectionLosses } from './connection-losses';
import { DeadLetterReactor } from './dead-letter-reactor';
import { FailedJobSweep } from './failed-job-sweep';
import { InboxRepository } from './inbox.repository';
import type { JobContext, JobDefinition } from './job-definition';
import {
  failedJobEvent,
  newerEnvelopeVersion,
  readFailedEnvelope,
  readJobEnvelope,
  type JobEnvelope,
} from './job-envelope';
import type { JobRegistry } from './job-registry';
import { silentLogger, type OutboxLogger } from './outbox-logger';
import type { OutboxFaults } from './outbox-faults';
import { OutboxRepository } from './outbox.repository';
import { connectBullmqRedis, connectRedis, type RedisClient, type RedisTarget } from './redis-connection';
import { describedError, redactError, redactText } from './redaction';
import { traceOutboxProcess } from './trace-context';

export interface WorkerRuntimeOptions {
  readonly db: Database;
  readonly registry: JobRegistry;
  /** Where Redis is: the runtime opens (and closes) one connection per Worker and Queue it makes. */
  readonly redis: RedisTarget;
  readonly prefix: string;
  /**
   * How long close() waits for a Worker with no job active before leaving it behind (ms, default
   * 2000; closeWorker).
   */
  readonly idleCloseGraceMs?: number;
  /** Jobs processed at once per queue. */
  readonly concurrency?: number;
  /** Only these queues (default: every queue of the registry). */
  readonly queues?: readonly string[];
  readonly logger?: OutboxLogger;
  /**
   * How often a job may lose its worker mid-run (the lock expired: the process died) before
   * BullMQ gives up on it. Default 3: a worker killed while holding a job is normal operations.
   */
  readonly maxStalledCount?: number;
  /** BullMQ lock duration and stall check interval in ms (defaults 30 s); tests shorten them. */
  readonly lockDurationMs?: number;
  readonly stalledIntervalMs?: number;
  /**
   * While PostgreSQL is unreachable a job goes back to its queue without counting an attempt,
   * and the queue pauses this long (ms, default 1000) before the next try: an outage longer than
   * the handler's backoff must not exhaust the attempts and strand the event.
   */
  readonly databaseRetryMs?: number;
  /**
   * How many times (default 3) a job goes back uncounted because one of this process's own
   * connections failed during its try while the database answers afterwards: an outage that ended
   * mid-try, or the job's own work ending its connection on every try. Past it such a failure
   * counts an attempt, so the second kind is dead-lettered instead of waiting forever.
   */
  readonly connectionLossPutBacks?: number;
  /**
   * A job this process has no handler for (a newer version's job on a shared queue, during a
   * rolling deploy) waits this long (ms, default 60 000) in the delayed set, no attempt counted,
   * for a worker that knows it, instead of failing; once it is older than unknownJobMaxAgeMs
   * (default 24 h: no deploy takes that long) it fails for good and this process dead-letters its
   * event.
   */
  readonly unknownJobDelayMs?: number;
  readonly unknownJobMaxAgeMs?: number;
  /**
   * How often (ms) BullMQ's failed sets are checked for jobs whose event never got its dead
   * letter (FailedJobSweep), also once at start, from the queue's high-water mark. 0: never.
   * Default 60 000. The dead-letter reactions (DeadLetterReactor) run at the same times, and
   * right after this process dead-letters an event.
   */
  readonly failedSweepIntervalMs?: number;
  /**
   * How often (ms) the dead-letter reactions run besides start and this process's own dead
   * letters: for dead letters other processes wrote (the dispatcher's) and reactions that failed.
   * Default 60 000; 0: never.
   */
  readonly deadLetterReactionIntervalMs?: number;
  /** Test-only crash points (OutboxFaults.fromEnv refuses them outside tests). */
  readonly faults?: OutboxFaults;
}

/** A job's identity across its tries (its id is its event's, unique per queue). */
const jobKey = (job: Job) => `${job.queueName}:${job.id}`;

/** BullMQ's reason for a job it failed itself because its workers kept dying under it. */
const STALLED_TOO_OFTEN = /stalled more than allowable limit/i;

/** What the processor returns; stored by BullMQ as the job's return value. */
export interface JobOutcome {
  /** True when the inbox showed this event was already applied: the handler did not run. */
  readonly duplicate: boolean;
  readonly result?: unknown;
}

/**
 * Consumes the registry's queues. Per job: look up the handler by job name, parse the payload
 * with the job's zod schema (a payload that does not parse is poison: UnrecoverableError, no
 * retry), run the handler in a transaction bound to the event's workspace, with the inbox row
 * written first in that transaction for inbox jobs (jobs defined with `transaction: false` open
 * their own transactions instead). When BullMQ will not retry any more (poison or attempts
 * exhausted) the outbox event is moved to dead_letter with a redacted error. While PostgreSQL
 * is unreachable a job is put back without counting an attempt (databaseRetryMs).
 */
export class OutboxWorkerRuntime {
  private readonly workers: Worker[] = [];
  /** close()'s step under way, and the queues whose Worker has not closed yet (closePending). */
  private closeStep: string | null = null;
  private readonly closingQueues = new Set<string>();
  /** Per queue, jobs in the processor now. */
  private readonly active = new Map<string, number>();
  /** Per queue, for pausing it (Queue.rateLimit) while the database is unreachable. */
  private readonly queues = new Map<string, Queue>();
  /** The connections given to the Workers and Queues: BullMQ does not close what it was given. */
  private readonly connections = new Set<RedisClient>();
  private readonly inbox: InboxRepository;
  private readonly outbox: OutboxRepository;
  private readonly logger: OutboxLogger;
  /** Dead-letter writes of stalled jobs waiting for the database to come back. */
  private readonly deadLetterRetries = new Set<NodeJS.Timeout>();
  private readonly connectionLosses: ConnectionLosses;
  private stopped = false;
  private sweep: {
    readonly sweeper: FailedJobSweep;
    readonly redis: RedisClient;
    timer: NodeJS.Timeout | null;
  } | null = null;
  private sweepRun: Promise<void> | null = null;
  private reactions: {
    reactor: DeadLetterReactor;
    run: Promise<void> | null;
    again: boolean;
    timer: NodeJS.Timeout | null;
  } | null = null;

  constructor(private readonly options: WorkerRuntimeOptions) {
    this.inbox = new InboxRepository(options.db);
    this.outbox = new OutboxRepository(options.db);
    this.logger = options.logger ?? silentLogger;
    this.connectionLosses = new ConnectionLosses(options.connectionLossPutBacks ?? 3);
  }

  /** Checks the registry (exactly one handler per job), then starts one Worker per queue. */
  async start(): Promise<void> {
    this.options.registry.assertComplete();
    this.stopped = false;
    const queues = this.options.queues ?? this.options.registry.queues();
    for (const queue of queues) {
      const worker = new Worker(queue, (job, token) => this.processCounted(queue, job, token), {
        connection: this.bullConnection(),
        prefix: this.options.prefix,
        concurrency: this.options.concurrency ?? 16,
        autorun: false,
        maxStalledCount: this.options.maxStalledCount ?? 3,
        ...(this.options.lockDurationMs ? { lockDuration: this.options.lockDurationMs } : {}),
        ...(this.options.stalledIntervalMs ? { stalledInterval: this.options.stalledIntervalMs } : {}),
      });
      worker.on('error', (error) =>
        this.logger.warn('worker connection error', { queue, error: redactError(error) }),
      );
      // A job BullMQ fails by itself (stalled too often) never reaches the processor's catch:
      // dead-letter its event here, or it would stay 'dispatched' with nobody working on it.
      worker.on('failed', (job, error) => {
        if (!job || !STALLED_TOO_OFTEN.test(error.message)) return;
        const envelope = readFailedEnvelope(job);
        if (envelope) this.deadLetterEventually(job, envelope, job.attemptsMade, error);
      });
      this.workers.push(worker);
      void worker
        .run()
        .catch((error: Error) => this.logger.error('worker stopped', { queue, error: redactError(error) }));
    }
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
    this.startReactions();
    this.startFailedSweep(queues);
    this.logger.info('workers started', { queues });
  }

  /** The failed-job sweep: once now (in the background), then every failedSweepIntervalMs. */
  private startFailedSweep(queues: readonly string[]): void {
    const every = this.options.failedSweepIntervalMs ?? 60_000;
    if (!every) return;
    const redis = connectRedis(this.options.redis, { maxRetriesPerRequest: 1 });
    redis.on('error', () => undefined); // the workers report Redis trouble
    const sweeper = new FailedJobSweep({
      db: this.options.db,
      redis,
      prefix: this.options.prefix,
      queues,
      logger: this.logger,
    });
    const sweep = { sweeper, redis, timer: null as NodeJS.Timeout | null };
    this.sweep = sweep;
    const tick = () => {
      if (this.sweep !== sweep || this.sweepRun) return;
      this.sweepRun = sweeper
        .run()
        .then((n) => {
          if (n) this.logger.warn('dead-lettered events whose failed job had no dead letter', { events: n });
        })
        .catch((error: unknown) =>
          this.logger.warn('failed-job sweep failed; it runs again', { error: redactError(error) }),
        )
        .finally(() => {
          this.sweepRun = null;
          this.react(); // the sweep's dead letters get their reactions now
        });
    };
    sweep.timer = setInterval(tick, every);
    sweep.timer.unref();
    tick();
  }

  /** The dead-letter reactions: now, every deadLetterReactionIntervalMs, and after our dead letters. */
  private startReactions(): void {
    const reactions = {
      reactor: new DeadLetterReactor({
        db: this.options.db,
        registry: this.options.registry,
        logger: this.logger,
      }),
      run: null,
      again: false,
      timer: null as NodeJS.Timeout | null,
    };
    this.reactions = reactions;
    const every = this.options.deadLetterReactionIntervalMs ?? 60_000;
    if (every) {
      reactions.timer = setInterval(() => this.react(), every);
      reactions.timer.unref();
    }
    this.react();
  }

  /** Runs the dead-letter reactions now, or once more after the run in progress. */
  private react(): void {
    const reactions = this.reactions;
    if (!reactions) return;
    if (reactions.run) {
      reactions.again = true;
      return;
    }
    reactions.run = reactions.reactor
      .run()
      .then((n) => {
        if (n) this.logger.info('dead letters reacted to', { events: n });
      })
      .catch((error: unknown) =>
        this.logger.warn('dead-letter reactions failed; they run again', { error: redactError(error) }),
      )
      .finally(() => {
        reactions.run = null;
        if (reactions.again && this.reactions === reactions) {
          reactions.again = false;
          this.react();
        }
      });
  }

  private async stopReactions(): Promise<void> {
    const reactions = this.reactions;
    this.reactions = null;
    if (!reactions) return;
    if (reactions.timer) clearInterval(reactions.timer);
    reactions.reactor.stop();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([reactions.run, new Promise((r) => (timer = setTimeout(r, 2000)))]);
    clearTimeout(timer);
  }

  private async stopFailedSweep(): Promise<void> {
    const sweep = this.sweep;
    this.sweep = null;
    if (!sweep) return;
    if (sweep.timer) clearInterval(sweep.timer);
    sweep.sweeper.stop();
    // It ends after its current page; a page waiting on an unreachable database must not hold
    // the stop up for long (the next worker's sweep reads it again).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.sweepRun, new Promise((r) => (timer = setTimeout(r, 2000)))]);
    clearTimeout(timer);
    sweep.redis.disconnect();
  }

  /** Drops the workers' connections without waiting for active jobs, leaving them locked (a crash, for tests). */
  async kill(): Promise<void> {
    this.cancelDeadLetterRetries();
    await this.stopFailedSweep();
    await this.stopReactions();
    await Promise.all(this.workers.map((w) => w.close(true)));
    this.workers.length = 0;
    await this.closeQueues();
    this.closeConnections();
  }

  /** Finishes the active jobs, then closes the connections. */
  async close(): Promise<void> {
    this.cancelDeadLetterRetries();
    this.closeStep = 'the failed-job sweep';
    await this.stopFailedSweep();
    this.closeStep = 'the dead-letter reactions';
    await this.stopReactions();
    this.closeStep = 'workers';
    await Promise.all(this.workers.map((w) => this.closeWorker(w)));
    this.workers.length = 0;
    this.closeStep = 'queues';
    await this.closeQueues();
    this.closeConnections();
    this.closeStep = null;
  }

  /**
   * Closes one Worker once its active jobs are finished. BullMQ's close can then still hang: when
   * Redis went away under the Worker's blocking read (a failover, a crash) the read may be
   * recovering its connection, and a reconnect that races the close never settles (BullMQ 6.7,
   * ioredis 6.1; docs/scaling.md). A Worker with no job in its processor for idleCloseGraceMs
   * whose close is still pending is left behind: it holds no job, and its connections are dropped
   * with the others.
   */
  private async closeWorker(worker: Worker): Promise<void> {
    const queue = worker.name;
    this.closingQueues.add(queue);
    let settled = false;
    const closing = worker.close().finally(() => {
      settled = true;
      this.closingQueues.delete(queue);
    });
    const graceMs = this.options.idleCloseGraceMs ?? 2000;
    let idleSince: number | null = null;
    while (!settled) {
      await Promise.race([closing, new Promise((r) => setTimeout(r, 100))]);
      if (settled) return;
      if (this.active.get(queue)) {
        idleSince = null;
        continue;
      }
      idleSince ??= Date.now();
      if (Date.now() - idleSince >= graceMs) {
        this.logger.warn('worker close still pending with no job active: left behind', { queue, graceMs });
        this.closingQueues.delete(queue);
        return;
      }
    }
  }

  /** process(), counted per queue while it runs (closeWorker). */
  private async processCounted(queue: string, job: Job, token?: string): Promise<JobOutcome> {
    this.active.set(queue, (this.active.get(queue) ?? 0) + 1);
    try {
      return await this.process(job, token);
    } finally {
      this.active.set(queue, this.active.get(queue)! - 1);
    }
  }

  /**
   * What close() is waiting on, for a stop that times out to say (null when it is not closing):
   * a stop that hangs is otherwise silent.
   */
  closePending(): string | null {
    if (this.closeStep !== 'workers') return this.closeStep;
    return `the workers of ${[...this.closingQueues].join(', ')} (active jobs, then their connections)`;
  }

  /** A new connection for one Worker or Queue (BullMQ duplicates it for its blocking reads). */
  private bullConnection(): RedisClient {
    const connection = connectBullmqRedis(this.options.redis);
    connection.on('error', () => undefined); // the Worker's own 'error' events report Redis trouble
    this.connections.add(connection);
    return connection;
  }

  /** After the Workers and Queues closed (their last commands answered): nothing is in flight. */
  private closeConnections(): void {
    for (const connection of this.connections) connection.disconnect();
    this.connections.clear();
  }

  private async closeQueues(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }

  /**
   * The job failed because PostgreSQL is unreachable, not because of the job: a provider refusing
   * a connection looks the same from the error alone. Decided by a probe, unless one of our own
   * connections failed since `since` (the try's start, performance.now()): a probe alone would miss
   * an outage that ended between the error and the probe, and count an attempt the job never had.
   * Then, for a job's try (`job`), a probe that finds the database back allows only a few
   * put-backs (ConnectionLosses): the job's own work may be what ends its connection.
   */
  private async databaseDown(error: unknown, since: number, job?: Job): Promise<boolean> {
    if (!isDatabaseUnavailable(error)) return false;
    if (!this.options.db.connectionFailedSince(since)) return this.probeFails();
    if (!job || (await this.probeFails())) return true;
    if (this.connectionLosses.allowPutBack(jobKey(job))) return true;
    this.logger.warn('the job lost its own connection again while the database answers: attempt counted', {
      queue: job.queueName,
      event: job.id,
      error: redactError(error),
    });
    return false;
  }

  /** True when `select 1` fails or takes over a second. */
  private async probeFails(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const probe = this.options.db.pool.query('select 1').then(
        () => false,
        () => true,
      );
      const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), 1000)));
      return await Promise.race([probe, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Puts the job back in its queue without counting an attempt, and pauses the queue a while. */
  private async retryLater(job: Job, error: unknown): Promise<never> {
    const pauseMs = this.options.databaseRetryMs ?? 1000;
    let queue = this.queues.get(job.queueName);
    if (!queue) {
      queue = new Queue(job.queueName, {
        connection: this.bullConnection(),
        prefix: this.options.prefix,
      });
      queue.on('error', () => undefined); // the worker's own connection reports Redis trouble
      this.queues.set(job.queueName, queue);
    }
    await queue.rateLimit(pauseMs);
    this.logger.warn('database unreachable: job back in its queue, no attempt counted', {
      queue: job.queueName,
      event: job.id,
      retryInMs: pauseMs,
      error: redactError(error),
    });
    throw Worker.RateLimitError();
  }

  /**
   * The BullMQ processor (public for tests; `token` is the job's lock, absent in tests), inside
   * the job's `process` span (trace-context.ts): a child of the send span whose context the
   * dispatcher put in the envelope, so the handler's calls belong to the request's trace.
   */
  async process(job: Job, token?: string): Promise<JobOutcome> {
    return traceOutboxProcess(
      {
        queue: job.queueName,
        type: job.name,
        id: job.id ?? '',
        attempt: job.attemptsMade + 1,
        data: job.data,
      },
      (error) =>
        error instanceof DelayedError || error instanceof RateLimitError
          ? { outcome: 'postponed' }
          : // What leaves processJob is already redacted (redactedJobError).
            { outcome: 'failed', message: error instanceof Error ? redactText(error.message) : undefined },
      async (span) => {
        const outcome = await this.processJob(job, token);
        this.connectionLosses.forget(jobKey(job));
        if (outcome.duplicate) span.setOutcome('duplicate');
        return outcome;
      },
    );
  }

  private async processJob(job: Job, token?: string): Promise<JobOutcome> {
    const started = performance.now();
    const registry = this.options.registry;
    const definition = registry.job(job.name);
    const handler = registry.handler(job.name);
    // A newer dispatcher's envelope (a rolling upgrade) is for a newer worker, as an unknown job is.
    const newer = definition?.scope === 'system' ? null : newerEnvelopeVersion(job.data);
    if (!definition || !handler || newer !== null) {
      const maxAgeMs = this.options.unknownJobMaxAgeMs ?? 86_400_000;
      if (!token || Date.now() - job.timestamp > maxAgeMs) {
        const error = new UnrecoverableError(
          newer === null
            ? `no handler for job ${job.name}`
            : `job ${job.name} has an envelope of version ${newer}, newer than this worker reads`,
        );
        // Dead-lettered here, not left to the failed-job sweep, which may be off.
        const envelope = readFailedEnvelope(job);
        if (envelope) await this.deadLetterLastAttempt(job, envelope, error, started);
        throw error;
      }
      const delayMs = this.options.unknownJobDelayMs ?? 60_000;
      this.logger.warn(
        newer === null
          ? 'no handler for this job here (a newer version?): delayed for a worker that knows it'
          : 'job envelope of a newer version: delayed for a worker that reads it',
        {
          queue: job.queueName,
          job: job.name,
          event: job.id,
          retryInMs: delayMs,
        },
      );
      await job.moveToDelayed(Date.now() + delayMs, token);
      throw new DelayedError();
    }
    if (definition.scope === 'system') {
      const payload = this.parse(definition, job.data);
      try {
        return { duplicate: false, result: await handler(payload, this.context(job, null)) };
      } catch (error) {
        if (await this.databaseDown(error, started, job)) await this.retryLater(job, error);
        throw redactedJobError(error);
      }
    }
    const envelope = readJobEnvelope(job.data);
    if (!envelope) {
      const error = new UnrecoverableError(`job ${job.id} is not an outbox event envelope`);
      const damaged = readFailedEnvelope(job);
      if (damaged) await this.deadLetterLastAttempt(job, damaged, error, started);
      throw error;
    }
    const { workspaceId } = envelope;
    const eventId = job.id!;
    try {
      const payload = this.parse(definition, envelope.payload);
      if (!definition.transaction) {
        const result = await handler(payload, this.context(job, workspaceId));
        return { duplicate: false, result: result ?? null };
      }
      const outcome = await this.options.db.withWorkspace(workspaceId, async (): Promise<JobOutcome> => {
        if (definition.inbox && !(await this.inbox.record(workspaceId, definition.name, eventId))) {
          return { duplicate: true };
        }
        const result = await handler(payload, this.context(job, workspaceId));
        return { duplicate: false, result: result ?? null };
      });
      this.options.faults?.afterHandlerCommit();
      return outcome;
    } catch (error) {
      if (await this.databaseDown(error, started, job)) await this.retryLater(job, error);
      const attempts = job.opts.attempts ?? 1;
      const final = error instanceof UnrecoverableError || job.attemptsMade + 1 >= attempts;
      if (final) await this.deadLetterLastAttempt(job, envelope, error, started);
      throw redactedJobError(error);
    }
  }

  /**
   * The job's last attempt failed: dead-letter its event before BullMQ fails the job. Failing the
   * job while its event cannot be dead-lettered would strand the event ('dispatched', nobody
   * working on it): back to the queue uncounted instead (throws), and the last attempt runs again
   * once the database answers. A write that keeps losing its own connection while the database
   * answers has the job's few put-backs, no more: the job's count is forgotten only once it is
   * not put back.
   */
  private async deadLetterLastAttempt(
    job: Job,
    envelope: JobEnvelope,
    error: unknown,
    started: number,
  ): Promise<void> {
    const failure = await this.deadLetter(job, envelope, job.attemptsMade + 1, error);
    if (failure !== undefined && (await this.databaseDown(failure, started, job)))
      await this.retryLater(job, failure);
    this.connectionLosses.forget(jobKey(job));
  }

  private parse(definition: JobDefinition, data: unknown): Record<string, unknown> {
    const parsed = definition.schema.safeParse(data);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '$'}: ${i.message}`).join('; ');
      throw new UnrecoverableError(`poison payload for ${definition.name}: ${issues}`);
    }
    return parsed.data;
  }

  private context(job: Job, workspaceId: string | null): JobContext {
    return {
      eventId: job.id!,
      workspaceId,
      attempt: job.attemptsMade + 1,
      job,
      inboxOnce: async (key?: string) => {
        if (!workspaceId) throw new UnrecoverableError('inboxOnce needs a workspace job');
        return this.inbox.record(workspaceId, key ?? job.name, job.id!);
      },
    };
  }

  /**
   * Moves the event to dead_letter, writing its row again from the job if it is gone; returns the
   * error of the write when it failed.
   */
  private async deadLetter(
    job: Job,
    envelope: JobEnvelope,
    attempts: number,
    error: unknown,
  ): Promise<unknown> {
    const message = redactError(error);
    const eventId = job.id!;
    try {
      const outcome = await this.options.db.withWorkspace(envelope.workspaceId, () =>
        this.outbox.deadLetterFromWorker(
          failedJobEvent(
            { id: eventId, queue: job.queueName, type: job.name, maxAttempts: job.opts.attempts },
            envelope,
            attempts,
            message,
          ),
        ),
      );
      const fields = { event: eventId, attempts, error: message };
      if (outcome === null) {
        this.logger.warn('job failed for good but its outbox event already is a dead letter', fields);
        return undefined;
      }
      // 'recreated': deleted by hand, or by a retention shorter than the job's life. Written back
      // so that its dead-letter reaction runs, but the settings that let it happen deserve a look.
      const what =
        outcome === 'recreated'
          ? 'job failed for good after its outbox event was deleted: the dead letter is written again'
          : 'job dead-lettered';
      this.logger.warn(what, fields);
      this.react();
      return undefined;
    } catch (e) {
      if (pgErrorCode(e) === PgErrorCode.foreignKeyViolation) {
        // The workspace itself is gone: nothing is left to dead-letter or to react for.
        this.logger.warn('job failed for good after its workspace was deleted', { event: eventId, attempts });
        return undefined;
      }
      this.logger.error('could not dead-letter the outbox event', { event: eventId, error: redactError(e) });
      return e;
    }
  }

  /**
   * dead-letter for a job BullMQ has already failed (stalled too often): there is no job left to
   * put back, so while the database is unreachable the write is retried here, backing off to 30 s,
   * for as long as this process runs. If it stops first, a later failed-job sweep (any worker's,
   * once the database answers) dead-letters the event (FailedJobSweep).
   */
  private deadLetterEventually(
    job: Job,
    envelope: JobEnvelope,
    attempts: number,
    error: unknown,
    retry = 0,
  ): void {
    const started = performance.now();
    void this.deadLetter(job, envelope, attempts, error).then(async (failure) => {
      if (failure === undefined || this.stopped || !(await this.databaseDown(failure, started))) return;
      if (this.stopped) return; // closed during the probe: nobody would cancel the timer
      const delay = Math.min(30_000, (this.options.databaseRetryMs ?? 1000) * 2 ** Math.min(retry, 5));
      const timer = setTimeout(() => {
        this.deadLetterRetries.delete(timer);
        this.deadLetterEventually(job, envelope, attempts, error, retry + 1);
      }, delay);
      timer.unref(); // a retry never keeps a stopping process alive
      this.deadLetterRetries.add(timer);
    });
  }

  private cancelDeadLetterRetries(): void {
    this.stopped = true;
    for (const timer of this.deadLetterRetries) clearTimeout(timer);
    this.deadLetterRetries.clear();
  }
}

/**
 * What BullMQ gets of a handler's error. It keeps the message and the stack trace in Redis, where
 * the queue dashboard shows them: the message is redacted like last_error, the trace keeps its
 * frames only (they name code, not data). An UnrecoverableError stays one (no retry).
 */
function redactedJobError(thrown: unknown): Error {
  const error = describedError(thrown);
  const message = error instanceof Error ? redactText(error.message) : redactText(String(error));
  const copy = thrown instanceof UnrecoverableError ? new UnrecoverableError(message) : new Error(message);
  if (error instanceof Error) {
    copy.name = error.name;
    // The code (a PostgreSQL SQLSTATE, ECONNREFUSED) says what failed and holds no data.
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string') Object.assign(copy, { code });
    const frames = (error.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
    copy.stack = [`${copy.name}: ${message}`, ...frames].join('\n');
  }
  return copy;
}
