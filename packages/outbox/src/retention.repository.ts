import type { Database } from '@listing/db';
import { sql } from '@listing/db';

/**
 * Retention statements. Each call deletes one bounded batch (the SQL functions cap it at 10,000
 * rows) in its own short transaction and returns how many rows went.
 */
export class RetentionRepository {
  constructor(private readonly db: Database) {}

  async purgeDispatched(before: Date, limit: number): Promise<number> {
    const r = await this.db.executor.execute(
      sql`select outbox_purge_dispatched(${before.toISOString()}::timestamptz, ${limit}::integer) as n`,
    );
    return Number((r.rows[0] as { n: number }).n);
  }

  async purgeInbox(before: Date, limit: number): Promise<number> {
    const r = await this.db.executor.execute(
      sql`select outbox_purge_inbox(${before.toISOString()}::timestamptz, ${limit}::integer) as n`,
    );
    return Number((r.rows[0] as { n: number }).n);
  }

  async purgeExpiredIdempotency(limit: number): Promise<number> {
    const r = await this.db.executor.execute(
      sql`select app_delete_expired_idempotency(${limit}::integer) as n`,
    );
    return Number((r.rows[0] as { n: number }).n);
  }
}
