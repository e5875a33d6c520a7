import type { Database, SqlRow, SqlText } from '@listing/db';
import { outboxEvents, sql, sqlInt, sqlLiteral, sqlText, sqlUuid, sqlUuidArray, type SQL } from '@listing/db';
import type { BackoffPolicy } from './backoff';
import { MAX_BACKOFF_EXPONENT } from './backoff';
import type { ClaimedEvent, DeadLetter, OutboxQueueStats } from './outbox-event';

/**
 * The dispatcher's own writes (claim, mark) commit without waiting for the WAL flush: losing one
 * in a PostgreSQL crash only means an event is claimed or delivered again, which at-least-once
 * delivery and re-entrant workers already absorb. It takes a disk flush (~2 ms here) off every
 * step between a business commit and the job reaching BullMQ.
 */
export const RELAXED_COMMIT = { synchronousCommit: false } as const;

/**
 * The event insert, planned once per connection (Database.tryExecutePreparedAtCommitInWorkspace):
 * it rides with every business COMMIT that appends an event, so parsing it each time was CPU
 * on the hottest write path (bench/dispatcher/RESULTS.md, 2026-12-07). No availableAt means
 * due at once (the transaction's now(), as the column default).
 */
export const OUTBOX_INSERT_EVENT = {
  name: 'outbox_insert_event',
  text: `INSERT INTO outbox_events
    (id, workspace_id, queue, event_type, payload, max_attempts, next_attempt_at, traceparent, tracestate)
  VALUES ($1::uuid, $2::uuid, $3::text, $4::text, $5::jsonb, $6::integer, coalesce($7::timestamptz, now()),
          $8::text, $9::text)`,
} as const;

/** A count or duration for inlined SQL: a non-negative integer. */
function count(n: number): SqlText {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`expected a non-negative integer, got ${n}`);
  return sqlInt(n);
}

/** Columns of outbox_events as a `sql` template query returns them. */
type EventRow<K extends keyof SqlRow<typeof outboxEvents>> = Pick<SqlRow<typeof outboxEvents>, K>;

/**
 * What outbox_claim_due returns (sql/011). queryInWorkspaces reads through pg's own parsers (the
 * pool, not Drizzle's session), so its timestamps arrive as Dates; jsonb narrowed to an object.
 */
type ClaimRow = EventRow<
  | 'id'
  | 'workspace_id'
  | 'queue'
  | 'event_type'
  | 'attempt_count'
  | 'max_attempts'
  | 'traceparent'
  | 'tracestate'
> & {
  payload: Record<string, unknown>;
  created_at: Date;
  locked_until: Date;
  /** locked_until in µs since the epoch, exact (bigint as text): the claim's lease token. */
  lease_us: string;
};

/** A dispatched event as of one moment: its id and dispatch time (µs since the epoch, exact). */
export interface DispatchedRef {
  readonly id: string;
  readonly dispatchedUs: string;
}

/**
 * A job the worker gave up on: the event as the job carries it (enough to write the row again if
 * it is gone, trace context included, so a retry of that dead letter stays in the request's trace),
 * the attempts made and the failure, already redacted.
 */
export interface FailedJobEvent extends Pick<
  NewOutboxRow,
  'id' | 'workspaceId' | 'queue' | 'type' | 'payload' | 'maxAttempts' | 'traceparent' | 'tracestate'
> {
  readonly createdAt: Date;
  readonly attempts: number;
  readonly error: string;
}

export interface DispatchedEvent extends DispatchedRef {
  readonly workspaceId: string;
  readonly queue: string;
}

/** One claim of one event: its id and the lease that claim took (ClaimedEvent.lease). */
export type ClaimRef = Pick<ClaimedEvent, 'id' | 'lease'>;

/**
 * FROM and WHERE of a settling update on `outbox_events e`: the rows still dispatching under
 * these very claims. The lease (locked_until to the microsecond) tells claims of the same
 * dispatcher apart: a later claim of an event can only lock it once the earlier lease expired
 * and was reclaimed, or its holder released it, so its transaction started (now()) at another
 * microsecond in practice; only a clock stepping back could repeat one. Matching locked_by alone
 * let a lane that stalled past its lease settle the claim another lane of the same dispatcher (or
 * a replica sharing its id) had taken since.
 * `is not distinct from`, not `=`: a strict comparison on locked_until proves the lease index's
 * predicate, and the planner read every in-flight event through that index (sql/010). Neither
 * side is ever null here.
 */
function leaseMatches(lockedBy: string, claims: readonly ClaimRef[]): SQL {
  return sql`from unnest(${sql.param(claims.map((c) => c.id))}::uuid[],
                         ${sql.param(claims.map((c) => c.lease))}::bigint[]) as claim(id, lease_us)
       where e.id = claim.id and e.status = 'dispatching' and e.locked_by = ${lockedBy}
         and (extract(epoch from e.locked_until) * 1000000)::bigint is not distinct from claim.lease_us`;
}

/** Delivered events of one workspace, to be marked dispatched. */
export interface MarkRequest {
  readonly workspaceId: string;
  readonly ids: readonly string[];
}

function toClaimedEvent(r: ClaimRow): ClaimedEvent {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    queue: r.queue,
    type: r.event_type,
    payload: r.payload,
    attemptCount: r.attempt_count,
    maxAttempts: r.max_attempts,
    createdAt: new Date(r.created_at),
    lockedUntil: new Date(r.locked_until),
    lease: r.lease_us,
    traceparent: r.traceparent,
    tracestate: r.tracestate,
  };
}

export interface NewOutboxRow {
  readonly id: string;
  readonly workspaceId: string;
  readonly queue: string;
  readonly type: string;
  readonly payload: Record<string, unknown>;
  readonly maxAttempts: number;
  readonly availableAt: Date | null;
  /** W3C trace context to store with the event (sql/023), or null. */
  readonly traceparent?: string | null;
  readonly tracestate?: string | null;
}

/**
 * Every SQL statement on outbox_events, one function per hot operation. Statements run on the
 * ambient executor (`db.executor`): the caller opens the transaction and binds the workspace
 * (RLS applies; the application role never bypasses it). The cross-workspace reads go through
 * the narrow SECURITY DEFINER functions of sql/003_outbox.sql and return ids or aggregates.
 */
export class OutboxRepository {
  constructor(private readonly db: Database) {}

  private async rows<T>(query: SQL): Promise<T[]> {
    const result = await this.db.executor.execute(query);
    return result.rows as T[];
  }

  /**
   * Inserts one pending event in the current transaction. Deferred to the COMMIT round trip
   * when the workspace stays bound until then (the event is a final write nothing else in the
   * transaction reads, so appending costs the business transaction no round trip of its own);
   * run at once otherwise. A failing insert fails the COMMIT: the whole transaction rolls back.
   */
  async insert(row: NewOutboxRow): Promise<void> {
    const payload = JSON.stringify(row.payload);
    if (payload === undefined) throw new TypeError('outbox payload has no JSON form');
    count(row.maxAttempts); // validates: a non-negative integer
    const values = [
      row.id,
      row.workspaceId,
      row.queue,
      row.type,
      payload,
      row.maxAttempts,
      row.availableAt,
      row.traceparent ?? null,
      row.tracestate ?? null,
    ];
    const { name, text } = OUTBOX_INSERT_EVENT;
    const queued = await this.db.tryExecutePreparedAtCommitInWorkspace(row.workspaceId, name, text, values);
    if (!queued) await this.db.prepared(name, text, values);
  }

  /** Workspaces with due pending events, in id order after `after` (round-robin cursor). */
  async dueWorkspaces(after: string | null, limit: number): Promise<string[]> {
    const rows = await this.rows<{ id: string }>(
      sql`select outbox_due_workspaces as id from outbox_due_workspaces(${after}::uuid, ${limit}::integer)`,
    );
    return rows.map((r) => r.id);
  }

  /** Workspaces holding expired dispatch leases. */
  async expiredLeaseWorkspaces(limit: number): Promise<string[]> {
    const rows = await this.rows<{ id: string }>(
      sql`select outbox_expired_lease_workspaces as id from outbox_expired_lease_workspaces(${limit}::integer)`,
    );
    return rows.map((r) => r.id);
  }

  /**
   * The dispatcher's hot path in one round trip and one transaction of its own (sql/009): first
   * marks delivered events dispatched (only where this dispatcher still holds the lease), then
   * claims up to `limit` due events for each workspace in `claims` (FOR UPDATE SKIP LOCKED, so
   * concurrent dispatchers get disjoint batches; lease = `leaseMs` from the database clock). Each
   * statement runs bound to its own workspace (RLS applies). Relaxed commit: losing it in a
   * server crash only means events are claimed or delivered again.
   *
   * The mark matches the dispatcher, not the claim (unlike markFailed and release): it records
   * that the event's job is in BullMQ, which holds whichever of our claims added it, and a later
   * claim's add of the same job id is then a no-op. Matching per claim would cost the hottest
   * statement a join for a case that changes nothing.
   */
  async markAndClaim(
    marks: readonly MarkRequest[],
    claims: readonly string[],
    lockedBy: string,
    limit: number,
    leaseMs: number,
  ): Promise<{ marked: number[]; claimed: ClaimedEvent[][] }> {
    const owner = sqlLiteral(lockedBy);
    const results = await this.db.queryInWorkspaces<Record<string, unknown>>(
      [
        ...marks.map(({ workspaceId, ids }) => ({
          workspaceId,
          statement: sqlText`SELECT outbox_mark_dispatched(${owner}, ${sqlUuidArray(ids)}) AS n`,
        })),
        ...claims.map((workspaceId) => ({
          workspaceId,
          statement: sqlText`SELECT id, workspace_id, queue, event_type, payload, attempt_count, max_attempts,
            created_at, locked_until, (extract(epoch FROM locked_until) * 1000000)::bigint AS lease_us,
            traceparent, tracestate FROM outbox_claim_due(${sqlUuid(workspaceId)}, ${owner}, ${count(limit)}, ${count(leaseMs)})`,
        })),
      ],
      RELAXED_COMMIT,
    );
    return {
      marked: results.slice(0, marks.length).map((rows) => Number(rows[0]?.n ?? 0)),
      claimed: results.slice(marks.length).map((rows) => (rows as unknown as ClaimRow[]).map(toClaimedEvent)),
    };
  }

  /** Claims due events of one workspace (see markAndClaim). */
  async claim(
    workspaceId: string,
    lockedBy: string,
    limit: number,
    leaseMs: number,
  ): Promise<ClaimedEvent[]> {
    return (await this.markAndClaim([], [workspaceId], lockedBy, limit, leaseMs)).claimed[0]!;
  }

  /** Marks events of one workspace dispatched where the lease is still ours (see markAndClaim). */
  async markDispatched(workspaceId: string, lockedBy: string, ids: readonly string[]): Promise<number> {
    return (await this.markAndClaim([{ workspaceId, ids }], [], lockedBy, 0, 0)).marked[0]!;
  }

  /**
   * A failed enqueue: attempt_count + 1, then back to pending with exponential backoff plus
   * jitter computed here in SQL, or dead_letter once max_attempts is reached. Only rows still
   * under the very claims given (leaseMatches): a claim that outlived its lease must not count an
   * attempt against, or dead-letter, a later claim of the same event whose job may be running.
   * `error` must already be redacted.
   */
  async markFailed(
    lockedBy: string,
    claims: readonly ClaimRef[],
    error: string,
    backoff: BackoffPolicy,
  ): Promise<{ retried: number; deadLettered: number }> {
    const rows = await this.rows<EventRow<'status'>>(sql`
      update outbox_events e
         set attempt_count = e.attempt_count + 1,
             status = case when e.attempt_count + 1 >= e.max_attempts then 'dead_letter' else 'pending' end,
             next_attempt_at = case when e.attempt_count + 1 >= e.max_attempts then e.next_attempt_at
               else now() + least(${backoff.maxMs}::float8,
                                  ${backoff.baseMs}::float8 * power(2, least(e.attempt_count, ${MAX_BACKOFF_EXPONENT}::integer)))
                            * (1 - ${backoff.jitter}::float8 * random()) * interval '1 millisecond' end,
             last_error = ${error}, locked_by = null, locked_until = null, updated_at = now()
        ${leaseMatches(lockedBy, claims)}
      returning e.status`);
    const deadLettered = rows.filter((r) => r.status === 'dead_letter').length;
    return { retried: rows.length - deadLettered, deadLettered };
  }

  /**
   * Gives leases back without counting an attempt (Redis unreachable, shutdown). Only rows still
   * under the very claims given (leaseMatches): a later claim of the same event stays put.
   */
  async release(lockedBy: string, claims: readonly ClaimRef[]): Promise<number> {
    const result = await this.db.executor.execute(sql`
      update outbox_events e
         set status = 'pending', locked_by = null, locked_until = null, updated_at = now()
        ${leaseMatches(lockedBy, claims)}`);
    return result.rowCount ?? 0;
  }

  /** Returns expired leases of the bound workspace to pending (their dispatcher died or stalled). */
  async reclaimExpired(workspaceId: string, limit: number): Promise<number> {
    // The ids first, then the rows by primary key (see sql/011): no join to plan badly.
    const result = await this.db.executor.execute(sql`
      update outbox_events
         set status = 'pending', locked_by = null, locked_until = null, updated_at = now(),
             last_error = 'lease expired: the dispatcher holding it stopped before marking it'
       where id = any (array(select id from outbox_events
                              where workspace_id = ${workspaceId} and status = 'dispatching' and locked_until < now()
                              limit ${limit}::integer
                              for update skip locked))`);
    return result.rowCount ?? 0;
  }

  /**
   * A page of events dispatched since `since`, across workspaces (sql/013: metadata only), in
   * (dispatch time, id) order after `after`. For finding jobs Redis has lost.
   */
  async dispatchedSince(since: Date, after: DispatchedRef | null, limit: number): Promise<DispatchedEvent[]> {
    const rows = await this.rows<{ id: string; workspace_id: string; queue: string; dispatched_us: string }>(
      sql`select * from outbox_dispatched_since(${since.toISOString()}::timestamptz, ${after?.dispatchedUs ?? null}::bigint,
                                                ${after?.id ?? null}::uuid, ${limit}::integer)`,
    );
    return rows.map((r) => ({
      id: r.id,
      workspaceId: r.workspace_id,
      queue: r.queue,
      dispatchedUs: r.dispatched_us,
    }));
  }

  /**
   * Dispatched events of the bound workspace whose job Redis lost go back to pending, due now, no
   * attempt counted. Only rows still dispatched at the very time that was checked: an event
   * dispatched again meanwhile (its new job exists) keeps its status.
   */
  async requeueLost(events: readonly DispatchedRef[]): Promise<number> {
    const result = await this.db.executor.execute(sql`
      update outbox_events e
         set status = 'pending', next_attempt_at = now(), dispatched_at = null, updated_at = now(),
             last_error = 'job lost by Redis after dispatch: dispatched again'
        from unnest(${sql.param(events.map((x) => x.id))}::uuid[],
                    ${sql.param(events.map((x) => x.dispatchedUs))}::bigint[]) as lost(id, us)
       where e.id = lost.id and e.status = 'dispatched'
         and (extract(epoch from e.dispatched_at) * 1000000)::bigint = lost.us`);
    return result.rowCount ?? 0;
  }

  /**
   * The worker gave up on the event's job (attempts exhausted or poison payload): the event of the
   * bound workspace becomes a dead letter. When its row is gone (a retention shorter than the
   * job's life, or deleted by hand) it is written again from the job, so the failure still reaches
   * the dead-letter reactor instead of vanishing with the job. Null when it already was one.
   */
  async deadLetterFromWorker(failed: FailedJobEvent): Promise<'dead-lettered' | 'recreated' | null> {
    const written = await this.writeDeadLetters([failed], sql`e.status <> 'dead_letter'`);
    return written.recreated ? 'recreated' : written.deadLettered ? 'dead-lettered' : null;
  }

  /**
   * Events of the bound workspace whose job BullMQ failed for good without the worker's dead
   * letter (FailedJobSweep) become dead letters: those still 'dispatched' by a dispatch from
   * before `readAt` (the database's clock before the failed jobs were read; a later dispatch has a
   * job of its own), and, as the worker's dead letter does, those whose row is gone, written again
   * from the job. A row in any other state is left alone. Errors already redacted.
   */
  deadLetterStranded(
    events: readonly FailedJobEvent[],
    readAt: string,
  ): Promise<{ deadLettered: number; recreated: number }> {
    return this.writeDeadLetters(
      events,
      sql`e.status = 'dispatched' and e.dispatched_at < ${readAt}::timestamptz`,
    );
  }

  /**
   * Writes the jobs' events as dead letters of the bound workspace: a row that exists is updated
   * where `replaces` holds for it (on `e`), a row that is gone is inserted from the job. Gone is
   * what the conflict check says: it reads the live index and waits out a concurrent delete (a
   * retention purge not yet committed), where a `not exists` would read the statement's snapshot.
   * `xmax = 0` marks an inserted row; one ON CONFLICT updated carries this transaction's id there.
   */
  private async writeDeadLetters(
    events: readonly FailedJobEvent[],
    replaces: SQL,
  ): Promise<{ deadLettered: number; recreated: number }> {
    const column = <T>(of: (e: FailedJobEvent) => T) => sql.param(events.map(of));
    const rows = await this.rows<{ recreated: boolean }>(sql`
      insert into outbox_events as e
             (id, workspace_id, queue, event_type, payload, status, attempt_count, max_attempts,
              last_error, created_at, traceparent, tracestate)
      select id, workspace_id, queue, event_type, payload, 'dead_letter', attempts, greatest(max_attempts, 1),
             error, created_at, traceparent, tracestate
        from unnest(${column((e) => e.id)}::uuid[], ${column((e) => e.workspaceId)}::uuid[],
                    ${column((e) => e.queue)}::text[], ${column((e) => e.type)}::text[],
                    ${column((e) => JSON.stringify(e.payload))}::jsonb[],
                    ${column((e) => e.attempts)}::integer[], ${column((e) => e.maxAttempts)}::integer[],
                    ${column((e) => e.error)}::text[], ${column((e) => e.createdAt.toISOString())}::timestamptz[],
                    ${column((e) => e.traceparent ?? null)}::text[], ${column((e) => e.tracestate ?? null)}::text[])
             as s(id, workspace_id, queue, event_type, payload, attempts, max_attempts, error, created_at,
                  traceparent, tracestate)
      on conflict (id) do update
         set status = 'dead_letter', attempt_count = greatest(e.attempt_count, excluded.attempt_count),
             last_error = excluded.last_error, locked_by = null, locked_until = null, updated_at = now()
       where ${replaces}
      returning xmax = 0 as recreated`);
    const recreated = rows.filter((r) => r.recreated).length;
    return { deadLettered: rows.length - recreated, recreated };
  }

  /** Workspaces holding dead letters no reaction has run for yet (sql/015). */
  async unhandledDeadLetterWorkspaces(after: string | null, limit: number): Promise<string[]> {
    const rows = await this.rows<{ id: string }>(
      sql`select outbox_unhandled_dead_letter_workspaces as id
            from outbox_unhandled_dead_letter_workspaces(${after}::uuid, ${limit}::integer)`,
    );
    return rows.map((r) => r.id);
  }

  /**
   * The next dead letter of the bound workspace no reaction has run for, locked (SKIP LOCKED:
   * another worker's reactor takes the next one). Must run in the transaction that records it.
   */
  async nextUnhandledDeadLetter(
    except: readonly string[] = [],
  ): Promise<{ id: string; type: string; payload: unknown } | undefined> {
    const rows = await this.rows<EventRow<'id' | 'event_type' | 'payload'>>(sql`
      select id, event_type, payload from outbox_events
       where workspace_id = app_current_workspace() and status = 'dead_letter' and dead_letter_handled_at is null
         and id <> all(${sql.param([...except])}::uuid[])
       limit 1 for update skip locked`);
    const row = rows[0];
    return row && { id: row.id, type: row.event_type, payload: row.payload };
  }

  async markDeadLetterHandled(id: string): Promise<void> {
    await this.db.executor.execute(sql`
      update outbox_events set dead_letter_handled_at = now()
       where id = ${id} and status = 'dead_letter' and dead_letter_handled_at is null`);
  }

  /** The database's clock (text, full precision), to compare with times it wrote. */
  async now(): Promise<string> {
    const rows = await this.rows<{ now: string }>(sql`select clock_timestamp()::text as now`);
    return rows[0]!.now;
  }

  /** Puts a dead letter of the bound workspace back to pending with a fresh attempt budget. */
  async retryDeadLetter(id: string): Promise<{ queue: string; type: string; attemptCount: number } | null> {
    const rows = await this.rows<EventRow<'queue' | 'event_type'> & { previous_attempts: number }>(sql`
      update outbox_events e
         set status = 'pending', attempt_count = 0, next_attempt_at = now(), dispatched_at = null,
             last_error = null, dead_letter_handled_at = null, updated_at = now()
        from (select id, attempt_count from outbox_events where id = ${id} and status = 'dead_letter' for update) old
       where e.id = old.id
      returning e.queue, e.event_type, old.attempt_count as previous_attempts`);
    const row = rows[0];
    return row ? { queue: row.queue, type: row.event_type, attemptCount: row.previous_attempts } : null;
  }

  /** Status of one event of the bound workspace, or null. */
  async status(id: string): Promise<string | null> {
    const rows = await this.rows<EventRow<'status'>>(sql`select status from outbox_events where id = ${id}`);
    return rows[0]?.status ?? null;
  }

  async deadLetters(
    filter: { queue?: string | null; id?: string | null },
    limit: number,
  ): Promise<DeadLetter[]> {
    const rows = await this.rows<
      EventRow<
        | 'id'
        | 'workspace_id'
        | 'queue'
        | 'event_type'
        | 'attempt_count'
        | 'last_error'
        | 'created_at'
        | 'updated_at'
      >
    >(
      sql`select * from outbox_dead_letters(${filter.queue ?? null}::text, ${filter.id ?? null}::uuid, ${limit}::integer)`,
    );
    return rows.map((r) => ({
      id: r.id,
      workspaceId: r.workspace_id,
      queue: r.queue,
      type: r.event_type,
      attemptCount: r.attempt_count,
      lastError: r.last_error,
      createdAt: new Date(r.created_at),
      updatedAt: new Date(r.updated_at),
    }));
  }

  async stats(): Promise<OutboxQueueStats[]> {
    const rows = await this.rows<{
      queue: string;
      status: string;
      events: string;
      oldest_age_ms: number | null;
    }>(sql`
      select queue, status, events,
             (extract(epoch from now() - oldest_created_at) * 1000)::float8 as oldest_age_ms
        from outbox_stats()`);
    const byQueue = new Map<
      string,
      { pending: number; dispatching: number; deadLetter: number; age: number | null }
    >();
    for (const r of rows) {
      const entry = byQueue.get(r.queue) ?? { pending: 0, dispatching: 0, deadLetter: 0, age: null };
      const n = Number(r.events);
      if (r.status === 'pending') {
        entry.pending = n;
        entry.age = r.oldest_age_ms === null ? null : Math.max(0, Math.round(Number(r.oldest_age_ms)));
      } else if (r.status === 'dispatching') entry.dispatching = n;
      else if (r.status === 'dead_letter') entry.deadLetter = n;
      byQueue.set(r.queue, entry);
    }
    return [...byQueue.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([queue, e]) => ({
        queue,
        pending: e.pending,
        dispatching: e.dispatching,
        deadLetter: e.deadLetter,
        oldestPendingAgeMs: e.age,
      }));
  }
}
