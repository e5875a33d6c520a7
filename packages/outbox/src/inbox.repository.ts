import type { Database } from '@listing/db';
import { sql } from '@listing/db';

/**
 * The worker inbox: one row per (workspace, handler, event) already applied. Must run in the
 * handler's transaction, bound to the event's workspace, so the row commits or rolls back with
 * the effect it guards.
 */
export class InboxRepository {
  constructor(private readonly db: Database) {}

  /**
   * Records that `handler` applied `eventId`. True the first time; false when it was already
   * recorded (a redelivery). A concurrent duplicate waits on the primary key until the first
   * transaction ends, then sees the conflict (or, if the first rolled back, wins).
   */
  async record(workspaceId: string, handler: string, eventId: string): Promise<boolean> {
    const tx = this.db.requireTransaction('inbox record');
    const result = await tx.execute(sql`
      insert into outbox_inbox (workspace_id, handler, event_id) values (${workspaceId}, ${handler}, ${eventId})
      on conflict do nothing`);
    return (result.rowCount ?? 0) === 1;
  }
}
