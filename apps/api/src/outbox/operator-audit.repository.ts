import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import type { RetriedDeadLetter } from '@listing/outbox';
import { sql } from '@listing/db';

/** Records operator actions on the outbox in audit_events (sql/002), in the caller's transaction. */
@Injectable()
export class OperatorAuditRepository {
  constructor(private readonly db: Database) {}

  async deadLetterRetried(actor: string, retried: RetriedDeadLetter): Promise<void> {
    const tx = this.db.requireTransaction('audit of a dead-letter retry');
    await tx.execute(sql`
      insert into audit_events (workspace_id, id, actor, action, entity_type, entity_id, metadata)
      values (${retried.workspaceId}, ${randomUUID()}, 'operator', 'OUTBOX_EVENT_RETRIED', 'outbox_event', ${retried.id},
              ${JSON.stringify({ operator: actor, queue: retried.queue, type: retried.type, previousAttempts: retried.previousAttempts })}::jsonb)`);
  }
}
