import type { Database } from '@listing/db';
import { sql } from '@listing/db';
import { IdempotencyRecordLostError } from './errors';
import type { ResultEnvelope } from './result-policy';

export interface IdempotencyOwner {
  workspaceId: string;
  userId: string;
}

export interface StoredIdempotencyRecord {
  operation: string;
  fingerprint: Buffer;
  fingerprintKeyId: string;
  status: 'PROCESSING' | 'SUCCEEDED';
  responseStatus: number | null;
  responseEnvelope: unknown;
  /**
   * How long it had left when the statement arrived, by the database's clock: what a process
   * whose clock differs can count down (an absolute time would be off by the difference).
   */
  expiresInMs: number;
  expired: boolean;
}

const MARK_SUCCEEDED = `update idempotency_requests
    set status = 'SUCCEEDED', response_status = $4, response_envelope = $5, completed_at = now()
  where workspace_id = $1 and user_id = $2 and idempotency_key = $3 and status = 'PROCESSING'
  returning 1 as marked`;

/**
 * SQL of idempotency_requests. Every statement runs on the ambient transaction (bound to the
 * owner's workspace, so RLS applies); one function per statement on the hot path.
 */
export class IdempotencyRepository {
  constructor(private readonly db: Database) {}

  /**
   * One statement for both paths: reads the record of (workspace, user, key) and, only when
   * there is none, inserts the PROCESSING reservation. It is the transaction's first statement,
   * so it travels in one message with BEGIN (Database.prepared): no round trip of its own.
   *
   * - a record exists → returned, nothing inserted (the insert's SELECT yields no row, so a
   *   replay writes nothing and is never assigned a transaction id);
   * - none → the reservation goes in (`reserved: true`);
   * - a concurrent uncommitted reservation of the same key makes the insert wait on the unique
   *   index, bounded by lock_timeout: when that one commits, nothing is inserted and nothing was
   *   visible to this statement's snapshot (`reserved: false`, no record), so the caller reads
   *   again; when it rolls back, ours goes in.
   */
  async findOrReserve(
    owner: IdempotencyOwner,
    key: string,
    operation: string,
    fingerprint: { keyId: string; digest: Buffer },
    ttlSeconds: number,
  ): Promise<{ reserved: boolean; existing: StoredIdempotencyRecord | undefined }> {
    const rows = await this.db.prepared<{
      reserved: number;
      operation: string | null;
      fingerprint: Buffer | null;
      fingerprint_key_id: string | null;
      status: 'PROCESSING' | 'SUCCEEDED' | null;
      response_status: number | null;
      response_envelope: unknown;
      expires_in_ms: number | null;
      expired: boolean | null;
    }>(
      'idempotency_find_or_reserve',
      `with existing as (
         select operation, fingerprint, fingerprint_key_id, status, response_status, response_envelope,
                (extract(epoch from expires_at - statement_timestamp()) * 1000)::float8 as expires_in_ms,
                expires_at <= now() as expired
           from idempotency_requests
          where workspace_id = $1 and user_id = $2 and idempotency_key = $3
       ), reservation as (
         insert into idempotency_requests
           (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
         select $1, $2, $3, $4, $5, $6, 'PROCESSING', now() + make_interval(secs => $7)
          where not exists (select 1 from existing)
         on conflict do nothing
         returning 1
       )
       select (select count(*) from reservation)::int as reserved, e.*
         from (select 1) as one left join existing e on true`,
      [owner.workspaceId, owner.userId, key, operation, fingerprint.digest, fingerprint.keyId, ttlSeconds],
    );
    const row = rows[0]!;
    if (row.reserved === 1 || row.status === null)
      return { reserved: row.reserved === 1, existing: undefined };
    return {
      reserved: false,
      existing: {
        operation: row.operation!,
        fingerprint: row.fingerprint!,
        fingerprintKeyId: row.fingerprint_key_id!,
        status: row.status,
        responseStatus: row.response_status,
        responseEnvelope: row.response_envelope,
        expiresInMs: row.expires_in_ms!,
        expired: row.expired === true,
      },
    };
  }

  /**
   * Marks the reservation SUCCEEDED with its envelope. Nothing in the transaction reads the row
   * afterwards, so the update rides with COMMIT (one round trip saved per keyed request), as
   * `EXECUTE` of a statement the connection prepared once: planning it on every keyed write cost
   * more server CPU than running it (bench/idempotency/RESULTS.md, 2026-12-06).
   */
  async markSucceeded(
    owner: IdempotencyOwner,
    key: string,
    status: number,
    envelope: ResultEnvelope,
  ): Promise<void> {
    const values = [owner.workspaceId, owner.userId, key, status, JSON.stringify(envelope)];
    const name = 'idempotency_mark_succeeded';
    if (await this.db.tryExecutePreparedAtCommitInWorkspace(owner.workspaceId, name, MARK_SUCCEEDED, values))
      return;
    // The workspace was bound inside a caller's unbound transaction and is unbound again before
    // COMMIT, where row-level security would hide the row and the update would match nothing,
    // committing a PROCESSING record no retry could ever replay. Update now, and insist on the row.
    const rows = await this.db.prepared(name, MARK_SUCCEEDED, values);
    if (rows.length !== 1) throw new IdempotencyRecordLostError(key);
  }

  /** Deletes the record only if it is still the expired one we saw. */
  async deleteExpired(owner: IdempotencyOwner, key: string): Promise<void> {
    await this.db.executor.execute(sql`
      delete from idempotency_requests
       where workspace_id = ${owner.workspaceId} and user_id = ${owner.userId} and idempotency_key = ${key}
         and expires_at <= now()`);
  }

  /** Applies the wait bound to a transaction this engine did not open. */
  async setLockTimeout(ms: number): Promise<void> {
    await this.db.executor.execute(sql`select set_config('lock_timeout', ${`${ms}ms`}, true)`);
  }

  /** Retention: deletes up to `limit` expired records across workspaces; returns how many. */
  async deleteExpiredBatch(limit: number): Promise<number> {
    const { rows } = await this.db.executor.execute<{ n: number }>(
      sql`select app_delete_expired_idempotency(${limit}) as n`,
    );
    return rows[0]?.n ?? 0;
  }
}
