import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { sql } from '@listing/db';

export interface AuditEntry {
  action: string;
  entityType: string;
  entityId?: string | null;
  revision?: number | null;
  actorUserId?: string | null;
  actor?: 'user' | 'system' | 'operator';
  /** Ids and codes only: never titles, payloads, credentials or tokens. */
  metadata?: Record<string, string | number | boolean | null>;
}

/** audit_events: append-only (app_user has no UPDATE/DELETE on it). */
@Injectable()
export class AuditRepository {
  constructor(private readonly db: Database) {}

  async append(entry: AuditEntry): Promise<void> {
    const tx = this.db.requireTransaction('audit append');
    await tx.execute(sql`
      insert into audit_events (workspace_id, id, actor_user_id, actor, action, entity_type, entity_id, revision, metadata)
      values (app_current_workspace(), ${randomUUID()}, ${entry.actorUserId ?? null}, ${entry.actor ?? 'user'}, ${entry.action},
              ${entry.entityType}, ${entry.entityId ?? null}, ${entry.revision ?? null}, ${JSON.stringify(entry.metadata ?? {})}::jsonb)`);
  }
}
