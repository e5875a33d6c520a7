import { type Database, PgErrorCode, pgErrorCode } from '@listing/db';
import {
  IdempotencyKeyReusedError,
  IdempotencyReplayUnavailableError,
  IdempotencyRequestInProgressError,
  IdempotencyScopeConflictError,
} from './errors';
import type { RequestFingerprint } from './fingerprint';
import type { IdempotencyOptions } from './idempotency-options';
import {
  IdempotencyRepository,
  type IdempotencyOwner,
  type StoredIdempotencyRecord,
} from './idempotency.repository';
import { ReplayCache } from './replay-cache';
import {
  ENVELOPE_SCHEMA_VERSION,
  type IdempotencyResultPolicy,
  type ResultEnvelope,
  isResultEnvelope,
} from './result-policy';

export interface RunPreparedInput<P, R> {
  /** The key's owner: the authenticated user inside the workspace. */
  owner: IdempotencyOwner;
  /** The Idempotency-Key (lowercase UUID), or null to run without the mechanism. */
  key: string | null;
  /** A key problem found while parsing the request (IdempotentRequestContext): thrown first. */
  keyError?: Error | null;
  /** METHOD + normalised actual path. */
  operation: string;
  fingerprint: RequestFingerprint;
  policy: IdempotencyResultPolicy<R>;
  /** Status of a first success; stored and replayed with the result. */
  status: number;
  /** Read-only, deterministic validation. Runs only after the reservation is held. */
  prepare: () => Promise<P>;
  /** The business writes (rows, revision, execution, audit, outbox). */
  work: (prepared: P) => Promise<R>;
}

export interface IdempotentOutcome<R> {
  result: R;
  status: number;
  replayed: boolean;
}

/** Test-only seams (fault injection); production passes none. */
export interface IdempotencyHooks {
  afterReserve?: (operation: string) => Promise<void>;
}

export type IdempotencyObserver = (
  outcome: 'miss' | 'hit' | 'key_reused' | 'scope_conflict' | 'in_progress',
  waitMs?: number,
) => void;

interface Flight {
  operation: string;
  fingerprint: RequestFingerprint;
  promise: Promise<IdempotentOutcome<unknown>>;
}

/**
 * The runPrepared state machine. Everything happens in the caller's single PostgreSQL
 * transaction, bound to the owner's workspace:
 *
 *   valid SUCCEEDED record → restore the first result through its policy (no current-state
 *   read, no prepare, no work, no write)
 *   otherwise → insert the PROCESSING reservation → prepare → work → mark SUCCEEDED with the
 *   envelope → COMMIT. Any failure rolls all of it back and caches nothing.
 *
 * Concurrent duplicates are arbitrated by the unique index: the follower's insert waits (bounded
 * by lock_timeout) for the leader's transaction; leader commits → follower replays, leader rolls
 * back → follower executes, timeout → IDEMPOTENCY_REQUEST_IN_PROGRESS. Within one process an
 * in-flight map lets duplicates await the leader instead of holding a connection each; it is
 * bypassed when the caller already runs inside an outer transaction, which may still roll back.
 */
export class IdempotencyService {
  private readonly repository: IdempotencyRepository;
  private readonly inFlight = new Map<string, Flight>();
  readonly replayCache: ReplayCache;

  constructor(
    private readonly db: Database,
    private readonly options: IdempotencyOptions,
    private readonly hooks: IdempotencyHooks = {},
    private readonly observe: IdempotencyObserver = () => undefined,
  ) {
    this.repository = new IdempotencyRepository(db);
    this.replayCache = new ReplayCache(options.replayCacheSize);
  }

  async runPrepared<P, R>(input: RunPreparedInput<P, R>): Promise<IdempotentOutcome<R>> {
    const { owner, key } = input;
    if (input.keyError) throw input.keyError;
    if (key === null) {
      const result = await this.db.withWorkspace(owner.workspaceId, async () =>
        input.work(await input.prepare()),
      );
      return { result, status: input.status, replayed: false };
    }
    // A body with no fingerprint (IdempotencyBodyNotCanonicalError) is refused here, before any
    // cache, flight or row is looked at: nothing is reserved for it.
    input.fingerprint.current();
    const id = `${owner.workspaceId}:${owner.userId}:${key}`;

    const cached = this.replayCache.get(id);
    if (cached) {
      this.checkScope(cached.operation, cached.fingerprintKeyId, cached.fingerprint, input);
      if (cached.policy !== input.policy.name)
        throw new IdempotencyReplayUnavailableError('result policy changed');
      this.observe('hit');
      return { result: cached.result as R, status: cached.status, replayed: true };
    }

    if (this.db.isInTransaction()) return this.runInTransaction(input, id);

    const flight = this.inFlight.get(id);
    if (
      flight &&
      flight.operation === input.operation &&
      sameRequest(flight.fingerprint, input.fingerprint)
    ) {
      // Bounded like a wait on the key in the database: a leader still running past it answers
      // IN_PROGRESS, never a hang.
      let timer: NodeJS.Timeout | undefined;
      const waited = Symbol('waited');
      const bound = new Promise<typeof waited>((resolve) => {
        timer = setTimeout(() => resolve(waited), this.options.lockTimeoutMs);
      });
      try {
        const outcome = await Promise.race([flight.promise as Promise<IdempotentOutcome<R>>, bound]);
        if (outcome === waited) {
          this.observe('in_progress', this.options.lockTimeoutMs);
          throw new IdempotencyRequestInProgressError(this.options.retryAfterSeconds);
        }
        this.observe('hit');
        return { ...outcome, replayed: true };
      } catch (error) {
        if (error instanceof IdempotencyRequestInProgressError) throw error;
        // The leader rolled back: race for the key in the database like anyone else.
      } finally {
        clearTimeout(timer);
      }
    }
    const promise = this.runInTransaction(input, id);
    if (!this.inFlight.has(id)) {
      const mine: Flight = { operation: input.operation, fingerprint: input.fingerprint, promise };
      this.inFlight.set(id, mine);
      const forget = () => {
        if (this.inFlight.get(id) === mine) this.inFlight.delete(id);
      };
      promise.then(forget, forget);
    }
    return promise;
  }

  /** Retention: deletes up to `limit` expired records (all workspaces); returns the count. */
  deleteExpired(limit = 1000): Promise<number> {
    return this.repository.deleteExpiredBatch(limit);
  }

  private runInTransaction<P, R>(input: RunPreparedInput<P, R>, id: string): Promise<IdempotentOutcome<R>> {
    const joined = this.db.isInTransaction();
    return this.db.withWorkspace(
      input.owner.workspaceId,
      async () => {
        if (joined) await this.repository.setLockTimeout(this.options.lockTimeoutMs);
        // At most a few laps: an expired record deleted, or a leader that committed while we
        // were between our read and our insert.
        for (let lap = 0; lap < 4; lap++) {
          const started = Date.now();
          const found = await this.inProgressOnLockTimeout(started, () =>
            this.repository.findOrReserve(
              input.owner,
              input.key!,
              input.operation,
              input.fingerprint.current(),
              this.options.ttlSeconds,
            ),
          );
          if (found.existing?.expired) {
            // A competitor may hold the expired row (re-reserving the key): the same wait applies.
            await this.inProgressOnLockTimeout(started, () =>
              this.repository.deleteExpired(input.owner, input.key!),
            );
            continue;
          }
          if (found.existing) return this.replay(found.existing, input, id, started);
          if (!found.reserved) continue; // a concurrent leader committed while we waited: read it
          await this.hooks.afterReserve?.(input.operation);
          const prepared = await input.prepare();
          const result = await input.work(prepared);
          const envelope: ResultEnvelope = {
            schemaVersion: ENVELOPE_SCHEMA_VERSION,
            policy: input.policy.name,
            result: input.policy.serialize(result),
          };
          await this.repository.markSucceeded(input.owner, input.key!, input.status, envelope);
          this.observe('miss', Date.now() - started);
          return { result, status: input.status, replayed: false };
        }
        throw new IdempotencyRequestInProgressError(this.options.retryAfterSeconds);
      },
      { lockTimeoutMs: this.options.lockTimeoutMs },
    );
  }

  /** A lock wait past the bound (55P03) means another request holds the key: 409 in progress. */
  private async inProgressOnLockTimeout<T>(started: number, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (pgErrorCode(error) === PgErrorCode.lockNotAvailable) {
        this.observe('in_progress', Date.now() - started);
        throw new IdempotencyRequestInProgressError(this.options.retryAfterSeconds);
      }
      throw error;
    }
  }

  private async replay<P, R>(
    record: StoredIdempotencyRecord,
    input: RunPreparedInput<P, R>,
    id: string,
    /** Date.now() before the record was read: the cache entry's clock starts no later. */
    readAt: number,
  ): Promise<IdempotentOutcome<R>> {
    this.checkScope(record.operation, record.fingerprintKeyId, record.fingerprint, input);
    // A committed PROCESSING row cannot come from this engine (it commits SUCCEEDED or nothing).
    if (record.status !== 'SUCCEEDED' || record.responseStatus === null) {
      this.observe('in_progress');
      throw new IdempotencyRequestInProgressError(this.options.retryAfterSeconds);
    }
    const envelope = record.responseEnvelope;
    if (!isResultEnvelope(envelope) || envelope.schemaVersion !== ENVELOPE_SCHEMA_VERSION) {
      throw new IdempotencyReplayUnavailableError('unknown result envelope');
    }
    if (envelope.policy !== input.policy.name) {
      throw new IdempotencyReplayUnavailableError(
        `stored by policy ${envelope.policy}, now ${input.policy.name}`,
      );
    }
    const result = await input.policy.restore(envelope.result);
    this.replayCache.set(id, {
      operation: record.operation,
      fingerprintKeyId: record.fingerprintKeyId,
      fingerprint: record.fingerprint,
      policy: envelope.policy,
      status: record.responseStatus,
      result,
      // By this process's clock, never past the database's expiry: another process may run the
      // key again from then on.
      expiresAt: readAt + record.expiresInMs,
    });
    this.observe('hit');
    return { result, status: record.responseStatus, replayed: true };
  }

  private checkScope<P, R>(
    operation: string,
    keyId: string,
    fingerprint: Buffer,
    input: RunPreparedInput<P, R>,
  ) {
    if (operation !== input.operation) {
      this.observe('scope_conflict');
      throw new IdempotencyScopeConflictError();
    }
    const matches = input.fingerprint.matches(keyId, fingerprint);
    if (matches === undefined) {
      throw new IdempotencyReplayUnavailableError(`fingerprint key "${keyId}" is no longer configured`);
    }
    if (!matches) {
      this.observe('key_reused');
      throw new IdempotencyKeyReusedError();
    }
  }
}

function sameRequest(a: RequestFingerprint, b: RequestFingerprint): boolean {
  const mine = a.current();
  return b.matches(mine.keyId, mine.digest) === true;
}
