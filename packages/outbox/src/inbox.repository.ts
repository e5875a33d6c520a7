import type { Database } from '@listing/db';

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
   * transaction ends, then sees the conflict (or, if the first rolled back, wins). A prepared
   * statement: first in a job's transaction, it travels with BEGIN (Database.prepared).
   */
  async record(workspaceId: string, handler: string, eventId: string): Promise<boolean> {
    this.db.requireTransaction('inbox record');
    const rows = await this.db.prepared(
      'outbox_inbox_record',
      `insert into outbox_inbox (workspace_id, handler, event_id) values ($1, $2, $3)
       on conflict do nothing returning 1`,
      [workspaceId, handler, eventId],
    );
    return rows.length === 1;
  }
}
