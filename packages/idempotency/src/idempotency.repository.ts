import type { Database } from '@listing/db';
import { sql } from '@listing/db';
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
  expiresAt: Date;
  expired: boolean;
}

/**
 * SQL of idempotency_requests. Every statement runs on the ambient transaction (bound to the
 * owner's workspace, so RLS applies); one function per statement on the hot path.
 */
export class IdempotencyRepository {
  constructor(private readonly db: Database) {}

  /** The record of (workspace, user, key), with `expired` judged by the database clock. */
  async find(owner: IdempotencyOwner, key: string): Promise<StoredIdempotencyRecord | undefined> {
    const { rows } = await this.db.executor.execute<{
      operation: string;
      fingerprint: Buffer;
      fingerprint_key_id: string;
      status: 'PROCESSING' | 'SUCCEEDED';
      response_status: number | null;
      response_envelope: unknown;
      expires_at: Date;
      expired: boolean;
    }>(sql`
      select operation, fingerprint, fingerprint_key_id, status, response_status, response_envelope,
             expires_at, expires_at <= now() as expired
        from idempotency_requests
       where workspace_id = ${owner.workspaceId} and user_id = ${owner.userId} and idempotency_key = ${key}`);
    const row = rows[0];
    if (!row) return undefined;
    return {
      operation: row.operation,
      fingerprint: row.fingerprint,
      fingerprintKeyId: row.fingerprint_key_id,
      status: row.status,
      responseStatus: row.response_status,
      responseEnvelope: row.response_envelope,
      expiresAt: new Date(row.expires_at),
      expired: row.expired,
    };
  }

  /**
   * Inserts the PROCESSING reservation. A concurrent uncommitted reservation of the same key
   * makes this statement wait on the unique index (bounded by lock_timeout): when that one
   * commits, nothing is inserted and false is returned; when it rolls back, ours goes in.
   */
  async reserve(
    owner: IdempotencyOwner,
    key: string,
    operation: string,
    fingerprint: { keyId: string; digest: Buffer },
    ttlSeconds: number,
  ): Promise<boolean> {
    const result = await this.db.executor.execute(sql`
      insert into idempotency_requests
        (workspace_id, user_id, idempotency_key, operation, fingerprint, fingerprint_key_id, status, expires_at)
      values (${owner.workspaceId}, ${owner.userId}, ${key}, ${operation}, ${fingerprint.digest},
              ${fingerprint.keyId}, 'PROCESSING', now() + make_interval(secs => ${ttlSeconds}))
      on conflict do nothing`);
    return result.rowCount === 1;
  }

  async markSucceeded(
    owner: IdempotencyOwner,
    key: string,
    status: number,
    envelope: ResultEnvelope,
  ): Promise<void> {
    await this.db.executor.execute(sql`
      update idempotency_requests
         set status = 'SUCCEEDED', response_status = ${status}, response_envelope = ${JSON.stringify(envelope)}::jsonb,
             completed_at = now()
       where workspace_id = ${owner.workspaceId} and user_id = ${owner.userId} and idempotency_key = ${key}
         and status = 'PROCESSING'`);
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
