import { Queue } from 'bullmq';
import type { RedisClient } from './redis-connection';
import type { ClaimedEvent, OutboxJobData } from './outbox-event';
import { traceOutboxSend, type SendTrace } from './trace-context';

export interface JobRetentionOptions {
  /**
   * Completed jobs are kept this long (s) so that a redelivery within the lease window is
   * deduplicated by BullMQ too (workers stay correct without it). Must be >= the lease.
   */
  readonly completedAgeSec: number;
  /** Failed jobs are kept for operators (s). */
  readonly failedAgeSec: number;
  /** First retry delay of a failing handler (BullMQ exponential backoff), ms. */
  readonly handlerBackoffMs: number;
}

/** Up to this many jobs per call go as separate adds rather than BullMQ's addBulk pipeline. */
const SMALL_BATCH = 16;

export const DEFAULT_JOB_RETENTION: JobRetentionOptions = {
  completedAgeSec: 24 * 3600,
  failedAgeSec: 7 * 24 * 3600,
  handlerBackoffMs: 1000,
};

/**
 * Turns claimed outbox events into BullMQ jobs: name = event type, jobId = event id, attempts =
 * the event's max_attempts. One Queue object per queue name over one shared connection (which the
 * owner closes: BullMQ does not close connections it was given).
 */
export class QueueProducer {
  private readonly queues = new Map<string, Queue>();

  constructor(
    private readonly connection: RedisClient,
    private readonly prefix: string,
    private readonly retention: JobRetentionOptions = DEFAULT_JOB_RETENTION,
  ) {}

  queue(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: this.connection,
        prefix: this.prefix,
        skipWaitingForReady: true,
      });
      queue.on('error', () => undefined); // surfaced through the failed add instead
      this.queues.set(name, queue);
    }
    return queue;
  }

  private job(event: ClaimedEvent, trace: SendTrace | null = null) {
    const data: OutboxJobData = {
      v: 1,
      workspaceId: event.workspaceId,
      payload: event.payload,
      createdAt: event.createdAt.getTime(),
      ...trace?.carrier,
    };
    return {
      name: event.type,
      data,
      opts: {
        jobId: event.id,
        attempts: event.maxAttempts,
        backoff: { type: 'exponential', delay: this.retention.handlerBackoffMs },
        removeOnComplete: { age: this.retention.completedAgeSec },
        removeOnFail: { age: this.retention.failedAgeSec },
      },
    };
  }

  /**
   * Adds the events' jobs. A few jobs (the usual case under a trickle) go as plain adds, one
   * script call each, sent together: BullMQ's addBulk builds an ioredis pipeline object with a
   * method per BullMQ script for every call, which cost the dispatcher more Node CPU than the adds
   * themselves up to about 16 jobs (bench/dispatcher/RESULTS.md). Same semantics either way:
   * addBulk is a pipeline, not a transaction, so some jobs may be added when another fails; an
   * existing job id is kept. Rejects with the first failure once every add has settled.
   */
  async addBulk(queue: string, events: readonly ClaimedEvent[]): Promise<void> {
    if (events.length > SMALL_BATCH) {
      // One send span per job, each under its own event's stored context (trace-context.ts).
      const traces = events.map((e) => traceOutboxSend(e));
      try {
        await this.queue(queue).addBulk(events.map((e, i) => this.job(e, traces[i])));
      } catch (error) {
        for (const t of traces) t?.end(error);
        throw error;
      }
      for (const t of traces) t?.end();
      return;
    }
    if (events.length === 1) return this.addOne(queue, events[0]!);
    const results = await Promise.allSettled(events.map((e) => this.addOne(queue, e)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async add(queue: string, event: ClaimedEvent): Promise<void> {
    await this.addOne(queue, event);
  }

  /** One add in the event's send span (when the event carries a trace context). */
  private async addOne(queue: string, event: ClaimedEvent): Promise<void> {
    const trace = traceOutboxSend(event);
    const job = this.job(event, trace);
    const add = () => this.queue(queue).add(job.name, job.data, job.opts);
    try {
      await (trace ? trace.within(add) : add());
    } catch (error) {
      trace?.end(error);
      throw error;
    }
    trace?.end();
  }

  /** Removes a leftover job (failed or completed) so that re-adding the same id is not deduplicated. */
  async removeJob(queue: string, jobId: string): Promise<boolean> {
    return (await this.queue(queue).remove(jobId)) === 1;
  }

  /** The ids among `ids` that have no job in `queue` (in any state): one pipelined round trip. */
  async missingJobs(queue: string, ids: readonly string[]): Promise<string[]> {
    if (!ids.length) return [];
    const q = this.queue(queue);
    const pipeline = this.connection.pipeline();
    for (const id of ids) pipeline.exists(q.toKey(id));
    const results = (await pipeline.exec()) ?? [];
    return ids.filter((_, i) => {
      const [error, exists] = results[i] ?? [new Error('no reply'), null];
      if (error) throw error;
      return exists === 0;
    });
  }

  /**
   * The run id of the Redis server holding this prefix's keys: a new one after every restart, and
   * another server's on failover. Asked through a script declaring one of those keys, so that a
   * cluster routes it to that slot's master rather than to any node.
   */
  async redisRunId(): Promise<string> {
    const info = (await this.connection.eval(
      "return redis.call('INFO', 'server')",
      1,
      `${this.prefix}:outbox:run-id`,
    )) as string;
    const runId = /^run_id:(\w+)/m.exec(info)?.[1];
    if (!runId) throw new Error('Redis INFO server has no run_id');
    return runId;
  }

  /** The connection and key prefix, for the outbox's own keys beside BullMQ's. */
  get redis(): RedisClient {
    return this.connection;
  }

  get keyPrefix(): string {
    return this.prefix;
  }

  /** Connected right now (no round trip). */
  isReady(): boolean {
    return this.connection.status === 'ready';
  }

  /** A PING within `timeoutMs`. */
  async ping(timeoutMs = 1000): Promise<boolean> {
    if (this.connection.status !== 'ready') return false;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
      return await Promise.race([this.connection.ping().then((r) => r === 'PONG'), timeout]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
