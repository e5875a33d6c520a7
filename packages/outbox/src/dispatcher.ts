import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Database } from '@listing/db';
import { assertBackoffPolicy, DEFAULT_BACKOFF, type BackoffPolicy } from './backoff';
import { groupBy } from './group-by';
import { LostJobRecovery } from './lost-job-recovery';
import type { ClaimedEvent } from './outbox-event';
import { OutboxFaults } from './outbox-faults';
import { silentLogger, type OutboxLogger } from './outbox-logger';
import { OutboxRepository, RELAXED_COMMIT } from './outbox.repository';
import type { QueueProducer } from './queue-producer';
import { redactError } from './redaction';
import { isRedisUnavailable } from './redis-unavailable';

/**
 * How long fast-lane marks wait before a cycle's round trip (or the mark timer) carries them, and
 * how many may wait before the next cycle carries them anyway. A mark is a statement per
 * workspace: carried by every cycle, under a trickle it cost PostgreSQL nearly what the claim did
 * (one event per statement). Gathered, one statement per workspace marks many events.
 */
const MARK_DELAY_MS = 50;
const MARK_BATCH = 500;

export interface DispatcherOptions {
  readonly db: Database;
  readonly producer: QueueProducer;
  /** Unique per process (locked_by); generated from host, pid and randomness when absent. */
  readonly id?: string;
  /** Events claimed per statement. */
  readonly batchSize?: number;
  /** Batches in flight at once (claim, add and mark of different batches overlap). */
  readonly concurrency?: number;
  /**
   * Fast lanes (nudged workspaces) in flight at once. Each lane claims every hinted workspace
   * in one round trip, so more lanes lower the wait under light load and fewer make bigger
   * batches under heavy load.
   */
  readonly fastLanes?: number;
  /** Per-workspace cap per round, in batches: a huge backlog cannot starve the other workspaces. */
  readonly batchesPerWorkspace?: number;
  /** Workspaces fetched per discovery (round-robin from a cursor). */
  readonly workspacesPerRound?: number;
  readonly leaseMs?: number;
  /** Polling fallback when no nudge arrives. */
  readonly pollIntervalMs?: number;
  readonly reclaimIntervalMs?: number;
  /** How often a paused dispatcher re-checks Redis. */
  readonly redisRetryMs?: number;
  readonly backoff?: BackoffPolicy;
  readonly faults?: OutboxFaults;
  readonly logger?: OutboxLogger;
  /**
   * After a Redis restart, put back dispatched events whose job was lost (LostJobRecovery): how
   * far back to look (s; BullMQ's completed-job age) and how often to compare Redis's run id (ms,
   * default the reclaim interval). Off when absent: the dispatcher process turns it on; tests that
   * run several BullMQ prefixes over one database must not.
   */
  readonly lostJobRecovery?: { readonly windowSec: number; readonly checkIntervalMs?: number };
  /** Observability hook, called after each batch is settled. */
  readonly onBatch?: (batch: BatchReport) => void;
}

export interface BatchReport {
  readonly round: number;
  readonly workspaceId: string;
  readonly claimed: number;
  readonly dispatched: number;
  readonly failed: number;
  readonly released: number;
}

export interface DispatcherStats {
  rounds: number;
  claimed: number;
  dispatched: number;
  failed: number;
  deadLettered: number;
  released: number;
  reclaimed: number;
  pauses: number;
  /** Dispatched events put back to pending because Redis had lost their job. */
  lostJobsRequeued: number;
  /** Times the loop went to sleep for the poll interval with nothing left to do (it is idle). */
  idleSleeps: number;
}

/**
 * The outbox dispatcher engine.
 *
 * Loop: if Redis is unreachable, pause (claim nothing, so no attempt is burnt). Otherwise discover
 * workspaces with due events (narrow SECURITY DEFINER function, ids only, round-robin from a
 * cursor), and let `concurrency` lanes work through per-workspace batches, interleaved across
 * workspaces and capped per workspace per round. A batch is: claim in a transaction bound to the
 * workspace (FOR UPDATE SKIP LOCKED, lease; one round trip), addBulk to BullMQ outside any
 * transaction with jobId = event id, then mark dispatched where the lease is still ours. A failed
 * add counts an attempt (backoff in SQL) unless Redis itself is down, in which case the leases
 * are released (and so is a claim still in flight when that pause comes). Expired leases are
 * reclaimed periodically.
 *
 * Wake-up: workspaces named by a nudge go to the fast lanes at once (no discovery, no waiting for
 * the round; a lane's cycle claims for every waiting workspace in one round trip); a nudge naming
 * none starts a round; otherwise the loop polls.
 * stop(): claim nothing more, finish in-flight batches, release what is still held.
 */
export class OutboxDispatcher {
  readonly id: string;
  readonly stats: DispatcherStats = {
    rounds: 0,
    claimed: 0,
    dispatched: 0,
    failed: 0,
    deadLettered: 0,
    released: 0,
    reclaimed: 0,
    pauses: 0,
    lostJobsRequeued: 0,
    idleSleeps: 0,
  };

  private readonly repository: OutboxRepository;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly batchesPerWorkspace: number;
  private readonly workspacesPerRound: number;
  private readonly leaseMs: number;
  private readonly pollIntervalMs: number;
  private readonly reclaimIntervalMs: number;
  private readonly redisRetryMs: number;
  private readonly backoff: BackoffPolicy;
  private readonly faults: OutboxFaults;
  private readonly logger: OutboxLogger;

  private loop: Promise<void> | null = null;
  private stopping = false;
  private paused = false;
  private woken = false;
  private wakeWaiter: (() => void) | null = null;
  private cursor: string | null = null;
  private lastReclaim = 0;
  private readonly recovery: LostJobRecovery | null;
  private readonly recoveryIntervalMs: number;
  private lastRecoveryCheck = 0;
  private recoveryRun: Promise<void> | null = null;
  /**
   * Claims this dispatcher holds, by event id (released on stop). A claim leaves it only as
   * itself (let go): a lane that outlived its lease must not drop a later claim of the event.
   */
  private readonly held = new Map<string, ClaimedEvent>();

  // The work list of the current round, shared by the lanes.
  private tasks: string[] = [];
  private exhausted = new Set<string>();
  /** Workspaces named by nudges, waiting for a fast lane (insertion order = FIFO). */
  private readonly hinted = new Set<string>();
  /** Workspaces a fast lane is serving now, and the lanes' promises (stop() awaits them). */
  private readonly serving = new Set<string>();
  private readonly fastLanes = new Set<Promise<void>>();
  private readonly fastLaneLimit: number;
  /** Fast-lane deliveries per workspace, not yet marked (see scheduleMarkFlush). */
  private readonly unmarked: ClaimedEvent[][] = [];
  private unmarkedCount = 0;
  /** When the oldest unmarked delivery was added (performance.now()). */
  private unmarkedSince = 0;
  private markTimer: NodeJS.Timeout | null = null;
  private refill: Promise<void> | null = null;
  private roundEmpty = false;
  /** A batch came back full since the last round started: more is likely due. */
  private sawFullBatch = false;
  private roundClaims = 0;
  /** roundClaims when the last discovery ran; a discovery pass that claimed nothing ends the round. */
  private claimsAtRefill = -1;

  constructor(private readonly options: DispatcherOptions) {
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.repository = new OutboxRepository(options.db);
    this.batchSize = options.batchSize ?? 500;
    this.concurrency = options.concurrency ?? 4;
    this.fastLaneLimit = options.fastLanes ?? 2;
    this.batchesPerWorkspace = options.batchesPerWorkspace ?? 4;
    this.workspacesPerRound = options.workspacesPerRound ?? 100;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    this.reclaimIntervalMs = options.reclaimIntervalMs ?? Math.min(5000, Math.max(100, this.leaseMs / 2));
    this.redisRetryMs = options.redisRetryMs ?? 500;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    assertBackoffPolicy(this.backoff);
    this.faults = options.faults ?? OutboxFaults.disabled();
    this.logger = options.logger ?? silentLogger;
    this.recovery = options.lostJobRecovery
      ? new LostJobRecovery({
          db: options.db,
          producer: options.producer,
          owner: this.id,
          windowSec: options.lostJobRecovery.windowSec,
          leaseMs: this.leaseMs,
          logger: this.logger,
        })
      : null;
    this.recoveryIntervalMs = options.lostJobRecovery?.checkIntervalMs ?? this.reclaimIntervalMs;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** Starts the loop in the background. */
  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.recovery?.resume();
    this.loop = this.run();
  }

  /**
   * A nudge arrived. Named workspaces go to the fast lanes: claimed at once, without discovery
   * and without waiting for the round in progress. A nudge naming none wakes the round loop.
   */
  wake(workspaceIds: readonly string[] = []): void {
    if (workspaceIds.length) {
      for (const id of workspaceIds) this.hinted.add(id);
      this.pump();
      return;
    }
    this.woken = true;
    const waiter = this.wakeWaiter;
    this.wakeWaiter = null;
    waiter?.();
  }

  /** Starts fast lanes (up to `fastLanes`) while hinted workspaces are waiting. */
  private pump(): void {
    while (
      this.loop &&
      !this.stopping &&
      !this.paused &&
      this.fastLanes.size < this.fastLaneLimit &&
      this.hasServableHint()
    ) {
      // fastLane() takes its hints before its first await, so this loop sees them gone.
      const lane: Promise<void> = this.fastLane().finally(() => {
        this.fastLanes.delete(lane);
        this.pump();
      });
      this.fastLanes.add(lane);
    }
  }

  /**
   * A fast lane. Each cycle takes every hinted workspace not being served and claims one batch
   * for each of them in one round trip, which also marks what earlier cycles delivered
   * (markAndClaim); then it adds the jobs, one addBulk per queue. It cycles while nudges keep
   * coming; its last marks wait for another cycle or the mark timer. Under load, hints pile up
   * while a cycle is in flight, so the batches grow with the load instead of the round trips.
   * One batch per nudge: a nudged workspace whose batch came back full has a backlog, which the
   * round-robin pass takes over, fairly with the other workspaces.
   */
  private async fastLane(): Promise<void> {
    for (;;) {
      const workspaces = this.stopping || this.paused ? [] : this.takeHints();
      if (!workspaces.length) {
        this.scheduleMarkFlush();
        return;
      }
      const delivered = this.marksDue() ? this.takeUnmarked() : [];
      let claimed: ClaimedEvent[][];
      try {
        claimed = await this.markAndClaim(delivered, workspaces);
      } catch (error) {
        for (const ws of workspaces) this.serving.delete(ws);
        this.logger.error('fast lane claim failed; the round-robin pass takes over', {
          error: redactError(error),
        });
        this.wake();
        this.scheduleMarkFlush(); // deliveries whose marks were not due yet
        return;
      }
      this.addUnmarked(await this.deliverFast(workspaces, claimed));
    }
  }

  private addUnmarked(delivered: readonly ClaimedEvent[][]): void {
    if (!delivered.length) return;
    if (!this.unmarked.length) this.unmarkedSince = performance.now();
    this.unmarked.push(...delivered);
    for (const events of delivered) this.unmarkedCount += events.length;
  }

  /** Marks are due once the oldest has waited MARK_DELAY_MS or MARK_BATCH events wait. */
  private marksDue(): boolean {
    return (
      this.unmarked.length > 0 &&
      (this.unmarkedCount >= MARK_BATCH || performance.now() - this.unmarkedSince >= MARK_DELAY_MS)
    );
  }

  /** Every unmarked delivery, one list per workspace (one mark statement each). */
  private takeUnmarked(): ClaimedEvent[][] {
    const events = this.unmarked.splice(0).flat();
    this.unmarkedCount = 0;
    return [...groupBy(events, (e) => e.workspaceId).values()];
  }

  /**
   * Marks what the fast lanes delivered and no later cycle carried, MARK_DELAY_MS after the oldest
   * delivery: under a steady load a cycle's round trip takes them first, so a mark rarely costs a
   * transaction of its own. Delaying a mark changes no latency (the job is already in BullMQ) and
   * risks nothing (the lease is held for seconds; a lost mark means one more delivery).
   */
  private scheduleMarkFlush(): void {
    if (this.markTimer || this.stopping || !this.unmarked.length) return;
    const wait = Math.max(0, this.unmarkedSince + MARK_DELAY_MS - performance.now());
    this.markTimer = setTimeout(() => {
      this.markTimer = null;
      const lane: Promise<void> = this.flushMarks().finally(() => {
        this.fastLanes.delete(lane);
        this.pump(); // hints that arrived while this flush held a lane slot
      });
      this.fastLanes.add(lane);
    }, wait);
  }

  private async flushMarks(): Promise<void> {
    const delivered = this.takeUnmarked();
    if (!delivered.length) return;
    try {
      await this.markAndClaim(delivered, []);
    } catch (error) {
      this.logger.error('mark dispatched failed; the leases will expire and be reclaimed', {
        error: redactError(error),
      });
    }
  }

  /** A hinted workspace no lane is serving (on every nudge: no allocation). */
  private hasServableHint(): boolean {
    for (const ws of this.hinted) if (!this.serving.has(ws)) return true;
    return false;
  }

  /** Hinted workspaces no lane is serving, now marked as served by the caller (FIFO). */
  private takeHints(): string[] {
    const taken: string[] = [];
    for (const ws of this.hinted) {
      if (taken.length >= this.workspacesPerRound) break;
      if (this.serving.has(ws)) continue;
      this.hinted.delete(ws);
      this.serving.add(ws);
      taken.push(ws);
    }
    return taken;
  }

  /**
   * Marks `delivered` (per workspace, events already in BullMQ) and claims for `workspaces`, in
   * one round trip. If it fails nothing is marked: those leases expire and the events are
   * delivered again (the jobs are deduplicated by id in BullMQ while they are kept).
   */
  private async markAndClaim(
    delivered: readonly ClaimedEvent[][],
    workspaces: readonly string[],
  ): Promise<ClaimedEvent[][]> {
    const marks = delivered.map((events) => ({
      workspaceId: events[0]!.workspaceId,
      ids: events.map((e) => e.id),
    }));
    try {
      const result = await this.repository.markAndClaim(
        marks,
        workspaces,
        this.id,
        this.batchSize,
        this.leaseMs,
      );
      delivered.forEach((events, i) => {
        const n = result.marked[i]!;
        this.stats.dispatched += n;
        this.options.onBatch?.({
          round: this.stats.rounds,
          workspaceId: events[0]!.workspaceId,
          claimed: events.length,
          dispatched: n,
          failed: 0,
          released: 0,
        });
      });
      return result.claimed;
    } finally {
      for (const events of delivered) this.letGo(events);
    }
  }

  /**
   * Adds one cycle's claims to BullMQ, one addBulk per queue across workspaces. Returns what was
   * added, per workspace, for the next cycle to mark; failures are settled here (afterAddFailure).
   */
  private async deliverFast(
    workspaces: readonly string[],
    claimed: readonly ClaimedEvent[][],
  ): Promise<ClaimedEvent[][]> {
    for (const events of claimed) {
      if (events.length === this.batchSize) this.wake(); // a backlog: the round-robin pass goes on
      this.stats.claimed += events.length;
      this.hold(events);
    }
    const byQueue = groupBy(claimed.flat(), (e) => e.queue);
    const added: ClaimedEvent[] = [];
    try {
      await Promise.all(
        [...byQueue.entries()].map(async ([queue, events]) => {
          if (this.paused) {
            await this.releasePaused(events);
            return;
          }
          try {
            await this.options.producer.addBulk(queue, events);
          } catch (error) {
            await this.settleFailedAdd(queue, events, error);
            return;
          }
          this.faults.traceAdds(this.id, events);
          this.faults.afterEnqueue();
          added.push(...events);
        }),
      );
    } finally {
      for (const ws of workspaces) this.serving.delete(ws);
    }
    return [...groupBy(added, (e) => e.workspaceId).values()];
  }

  /** A fast lane's addBulk failed: settle each workspace's share as a round batch would. */
  private async settleFailedAdd(
    queue: string,
    events: readonly ClaimedEvent[],
    error: unknown,
  ): Promise<void> {
    // The bulk's error belongs to a single event only when the bulk was that event alone.
    const errorIsTheirs = events.length === 1;
    const deadline = this.reAddDeadline();
    for (const [ws, list] of groupBy(events, (e) => e.workspaceId)) {
      try {
        const r = await this.afterAddFailure(ws, queue, list, error, errorIsTheirs, deadline);
        this.options.onBatch?.({ round: this.stats.rounds, workspaceId: ws, claimed: list.length, ...r });
      } finally {
        this.letGo(list);
      }
    }
  }

  /** Stops claiming, finishes in-flight batches, releases the leases still held. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.recovery?.stop();
    this.wake();
    await this.loop;
    await this.recoveryRun;
    if (this.markTimer) clearTimeout(this.markTimer);
    this.markTimer = null;
    while (this.fastLanes.size) await Promise.all([...this.fastLanes]);
    await this.flushMarks(); // before releasing: a delivered event must be marked, not released
    this.loop = null;
    await this.releaseHeld();
  }

  /** One full pass over the currently due work (tests, benchmarks): until nothing is due. */
  async drain(maxRounds = Number.MAX_SAFE_INTEGER): Promise<number> {
    let total = 0;
    for (let i = 0; i < maxRounds; i++) {
      const n = await this.round();
      total += n;
      if (n === 0) break;
    }
    return total;
  }

  private async run(): Promise<void> {
    this.logger.info('dispatcher started', { dispatcher: this.id });
    while (!this.stopping) {
      try {
        if (!(await this.redisHealthy())) {
          this.setPaused(true);
          await this.sleep(this.redisRetryMs);
          continue;
        }
        this.setPaused(false);
        this.maybeCheckForLostJobs();
        await this.maybeReclaim();
        this.woken = false;
        this.sawFullBatch = false;
        await this.round();
        // Go again at once only where a backlog is likely (a full batch) or a nudge asked for a
        // round; otherwise poll. New events under a steady load reach the fast lanes by their
        // nudges: a round loop re-running discovery after every trickle would only burn CPU.
        if (!this.sawFullBatch && !this.woken && !this.stopping) {
          this.stats.idleSleeps++;
          await this.sleep(this.pollIntervalMs);
        }
      } catch (error) {
        this.logger.error('dispatcher round failed', { error: redactError(error) });
        await this.sleep(Math.min(this.pollIntervalMs, 1000));
      }
    }
    this.logger.info('dispatcher stopped', { dispatcher: this.id, ...this.stats });
  }

  private async redisHealthy(): Promise<boolean> {
    if (!this.options.producer.isReady()) return false;
    return this.paused ? this.options.producer.ping() : true;
  }

  private setPaused(paused: boolean): void {
    if (paused === this.paused) return;
    this.paused = paused;
    if (paused) {
      this.stats.pauses++;
      this.logger.warn('redis unreachable: dispatcher paused (no claims, no attempts counted)', {
        dispatcher: this.id,
      });
    } else {
      this.logger.info('redis reachable again: dispatcher resumed', { dispatcher: this.id });
      this.lastRecoveryCheck = 0; // an outage is often a restart: look for lost jobs at once
      this.pump();
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeWaiter = null;
        resolve();
      }, ms);
      this.wakeWaiter = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Runs lanes until the current round's work list is exhausted; returns events claimed. */
  async round(): Promise<number> {
    this.tasks = [];
    this.exhausted = new Set();
    this.roundEmpty = false;
    this.roundClaims = 0;
    this.claimsAtRefill = -1;
    let claimed = 0;
    const lane = async () => {
      for (;;) {
        if (this.stopping || this.paused) return;
        const workspaceId = await this.nextTask();
        if (!workspaceId) return;
        const n = await this.batch(workspaceId); // not `claimed += await …`: lanes interleave
        claimed += n;
      }
    };
    // Every lane finishes before the round ends, also when one fails: a lane left running would
    // share state with the next round, and stop() would release leases under its adds.
    const lanes = await Promise.allSettled(Array.from({ length: this.concurrency }, lane));
    const failure = lanes.find((l): l is PromiseRejectedResult => l.status === 'rejected');
    if (failure) throw failure.reason;
    return claimed;
  }

  /** Next workspace to claim from; refills the list (one discovery at a time) when it is empty. */
  private async nextTask(): Promise<string | null> {
    for (;;) {
      if (this.stopping || this.paused) return null;
      while (this.tasks.length) {
        const ws = this.tasks.shift()!;
        if (!this.exhausted.has(ws)) return ws;
      }
      if (this.roundEmpty) return null;
      if (!this.refill) {
        // Due workspaces whose rows are all locked by another claimer (or otherwise unclaimable)
        // must not make the round spin: a pass that claimed nothing ends it.
        if (this.claimsAtRefill === this.roundClaims) return null;
        this.claimsAtRefill = this.roundClaims;
        this.refill = this.discover().finally(() => (this.refill = null));
      }
      await this.refill;
    }
  }

  private async discover(): Promise<void> {
    await this.maybeReclaim();
    const limit = this.workspacesPerRound;
    const found = await this.repository.dueWorkspaces(this.cursor, limit);
    if (found.length < limit && this.cursor !== null) {
      const seen = new Set(found);
      for (const ws of await this.repository.dueWorkspaces(null, limit - found.length)) {
        if (!seen.has(ws)) found.push(ws);
      }
    }
    if (!found.length) {
      this.roundEmpty = true;
      this.cursor = null;
      return;
    }
    this.cursor = found[found.length - 1]!;
    this.stats.rounds++;
    this.exhausted = new Set();
    // Interleaved: every workspace's first batch before anyone's second.
    for (let b = 0; b < this.batchesPerWorkspace; b++) this.tasks.push(...found);
  }

  /** claim → add → mark for one workspace batch. Returns the number claimed. */
  private async batch(workspaceId: string): Promise<number> {
    const claimed = await this.repository.claim(workspaceId, this.id, this.batchSize, this.leaseMs);
    if (claimed.length < this.batchSize) this.exhausted.add(workspaceId);
    if (!claimed.length) return 0;
    this.roundClaims += claimed.length;
    if (claimed.length === this.batchSize) this.sawFullBatch = true;
    this.stats.claimed += claimed.length;
    this.hold(claimed);
    const report = {
      round: this.stats.rounds,
      workspaceId,
      claimed: claimed.length,
      dispatched: 0,
      failed: 0,
      released: 0,
    };
    try {
      await Promise.all(
        [...groupBy(claimed, (e) => e.queue).entries()].map(async ([queue, events]) => {
          const r = await this.deliver(workspaceId, queue, events);
          report.dispatched += r.dispatched;
          report.failed += r.failed;
          report.released += r.released;
        }),
      );
    } finally {
      this.letGo(claimed);
    }
    this.options.onBatch?.(report);
    return claimed.length;
  }

  private async deliver(
    workspaceId: string,
    queue: string,
    events: ClaimedEvent[],
  ): Promise<{ dispatched: number; failed: number; released: number }> {
    // Another lane was refused while this claim was in flight: no write Redis would refuse too.
    if (this.paused) {
      return { dispatched: 0, failed: 0, released: await this.releaseClaimed(workspaceId, events) };
    }
    try {
      await this.options.producer.addBulk(queue, events);
    } catch (error) {
      return this.afterAddFailure(workspaceId, queue, events, error, true, this.reAddDeadline());
    }
    this.faults.traceAdds(this.id, events);
    this.faults.afterEnqueue();
    const marked = await this.markDispatched(workspaceId, events);
    this.stats.dispatched += marked;
    return { dispatched: marked, failed: 0, released: 0 };
  }

  /**
   * addBulk failed. Redis down or refusing writes (isRedisUnavailable, or no PONG) → release the
   * leases (no attempt counted) and pause. Otherwise isolate the culprits one add at a time and
   * count an attempt only against those. `errorIsTheirs`: the error came from adding exactly
   * these events (a fast lane's bulk also carries other workspaces' events). No add is tried
   * after `deadline` (reAddDeadline): the rest are released.
   */
  private async afterAddFailure(
    workspaceId: string,
    queue: string,
    events: ClaimedEvent[],
    error: unknown,
    errorIsTheirs: boolean,
    deadline: number,
  ): Promise<{ dispatched: number; failed: number; released: number }> {
    const result = { dispatched: 0, failed: 0, released: 0 };
    const release = async (list: ClaimedEvent[], { pause = true } = {}) => {
      if (!list.length) return;
      if (pause) this.setPaused(true);
      result.released += await this.releaseClaimed(workspaceId, list);
    };
    if (isRedisUnavailable(error) || !(await this.options.producer.ping())) {
      await release(events);
      return result;
    }
    const ok: ClaimedEvent[] = [];
    const failed: Array<{ event: ClaimedEvent; error: unknown }> = [];
    const untried: ClaimedEvent[] = [];
    const alone = events.length === 1 && errorIsTheirs;
    for (const event of alone ? [] : events) {
      if (Date.now() > deadline) {
        untried.push(event);
        continue;
      }
      try {
        await this.options.producer.add(queue, event);
        ok.push(event);
      } catch (e) {
        failed.push({ event, error: e });
      }
    }
    if (alone) failed.push({ event: events[0]!, error });
    await release(untried, { pause: false });
    if (ok.length) {
      this.faults.traceAdds(this.id, ok);
      this.faults.afterEnqueue();
      const n = await this.markDispatched(workspaceId, ok);
      this.stats.dispatched += n;
      result.dispatched += n;
    }
    if (
      failed.length &&
      (failed.some((f) => isRedisUnavailable(f.error)) || !(await this.options.producer.ping()))
    ) {
      await release(failed.map((f) => f.event));
      return result;
    }
    for (const { event, error: e } of failed) {
      const message = redactError(e);
      const r = await this.settle(workspaceId, 'mark failed', () =>
        this.repository.markFailed(this.id, [event], message, this.backoff),
      );
      if (r) {
        this.stats.failed += r.retried + r.deadLettered;
        this.stats.deadLettered += r.deadLettered;
        result.failed += r.retried + r.deadLettered;
      }
      // Written, but nothing counted: the lease had expired and the event was claimed again.
      const stale = r !== undefined && r.retried + r.deadLettered === 0;
      this.logger.warn(stale ? 'enqueue failed; the claim was no longer held' : 'enqueue failed', {
        event: event.id,
        queue,
        error: message,
        deadLetter: r?.deadLettered === 1,
      });
    }
    return result;
  }

  /**
   * When one-at-a-time re-adds after a failed bulk must stop: adds can be slow (each up to the
   * command timeout), and none may happen after another dispatcher could have reclaimed the
   * events. Taken once per failed bulk, however many workspaces share it; the claim and the
   * failed bulk before it took at most one command timeout, far less than half a lease.
   */
  private reAddDeadline(): number {
    return Date.now() + this.leaseMs / 2;
  }

  /** Marks delivered events; a failure leaves the lease to expire (the event is delivered again). */
  private async markDispatched(workspaceId: string, events: readonly ClaimedEvent[]): Promise<number> {
    try {
      return await this.repository.markDispatched(
        workspaceId,
        this.id,
        events.map((e) => e.id),
      );
    } catch (error) {
      this.logger.error('mark dispatched failed; the lease will expire and be reclaimed', {
        workspace: workspaceId,
        error: redactError(error),
      });
      return 0;
    }
  }

  /**
   * Puts claimed events of one workspace back to pending, untried: no attempt is counted. Returns
   * how many were released.
   */
  private async releaseClaimed(workspaceId: string, events: readonly ClaimedEvent[]): Promise<number> {
    const n =
      (await this.settle(workspaceId, 'release', () => this.repository.release(this.id, events))) ?? 0;
    this.stats.released += n;
    return n;
  }

  /**
   * A claim that came back after another lane paused the dispatcher (its claim was in flight when
   * Redis refused that lane's add): release it rather than send Redis one more write it refuses.
   */
  private async releasePaused(events: readonly ClaimedEvent[]): Promise<void> {
    for (const [ws, list] of groupBy(events, (e) => e.workspaceId)) {
      try {
        const released = await this.releaseClaimed(ws, list);
        this.options.onBatch?.({
          round: this.stats.rounds,
          workspaceId: ws,
          claimed: list.length,
          dispatched: 0,
          failed: 0,
          released,
        });
      } finally {
        this.letGo(list);
      }
    }
  }

  private hold(events: readonly ClaimedEvent[]): void {
    for (const e of events) this.held.set(e.id, e);
  }

  private letGo(events: readonly ClaimedEvent[]): void {
    for (const e of events) if (this.held.get(e.id) === e) this.held.delete(e.id);
  }

  /** Runs a settling statement under the workspace; a failure leaves the lease to expire. */
  private async settle<T>(workspaceId: string, what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await this.options.db.withWorkspace(workspaceId, fn, RELAXED_COMMIT);
    } catch (error) {
      this.logger.error(`${what} failed; the lease will expire and be reclaimed`, {
        workspace: workspaceId,
        error: redactError(error),
      });
      return undefined;
    }
  }

  /**
   * Compares Redis's run id with the last one swept, in the background (a sweep after a restart
   * can take a while and must not hold up dispatching); one check at a time.
   */
  private maybeCheckForLostJobs(): void {
    const recovery = this.recovery;
    if (!recovery || this.stopping || this.recoveryRun) return;
    if (Date.now() - this.lastRecoveryCheck < this.recoveryIntervalMs) return;
    this.lastRecoveryCheck = Date.now();
    this.recoveryRun = recovery
      .check()
      .then((report) => {
        if (!report?.requeued) return;
        this.stats.lostJobsRequeued += report.requeued;
        this.wake([...report.workspaceIds]);
      })
      .catch((error: unknown) => {
        this.logger.error('lost-job check failed; it runs again', { error: redactError(error) });
      })
      .finally(() => (this.recoveryRun = null));
  }

  private async maybeReclaim(): Promise<void> {
    if (Date.now() - this.lastReclaim < this.reclaimIntervalMs) return;
    this.lastReclaim = Date.now();
    await this.reclaimExpired();
  }

  private async reclaimExpired(): Promise<void> {
    const workspaces = await this.repository.expiredLeaseWorkspaces(this.workspacesPerRound);
    for (const ws of workspaces) {
      const n = await this.options.db.withWorkspace(ws, () => this.repository.reclaimExpired(ws, 10_000));
      if (n) {
        this.stats.reclaimed += n;
        this.logger.warn('reclaimed expired leases', { workspace: ws, events: n });
      }
    }
  }

  private async releaseHeld(): Promise<void> {
    for (const [ws, held] of groupBy(this.held.values(), (e) => e.workspaceId)) {
      const n = await this.settle(ws, 'release on stop', () => this.repository.release(this.id, held));
      this.stats.released += n ?? 0;
    }
    this.held.clear();
  }
}
