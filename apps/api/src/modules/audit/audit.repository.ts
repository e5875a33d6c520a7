import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { auditEvents, Database, sql, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder, type PagePosition } from '../../common/page-cursor';
import type { AuditEventView } from './audit-view';

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

  /**
   * The bound workspace's entries newest first, of one resource when given: a range of
   * audit_events_page_idx or audit_events_resource_page_idx (sql/022).
   */
  async list(
    limit: number,
    after?: PagePosition,
    resource?: { type: string; id: string },
  ): Promise<AuditEventView[]> {
    const { rows } = await this.db.executor.execute<AuditRow>(sql`
      select id, action, entity_type, entity_id, revision, actor, actor_user_id, metadata, created_at
        from audit_events
       where workspace_id = app_current_workspace()
         ${resource ? sql`and entity_type = ${resource.type} and entity_id = ${resource.id}` : sql``}
         ${afterCursor(after)}
       ${pageOrder()}
       limit ${limit}`);
    return rows.map((r) => ({
      id: r.id,
      action: r.action,
      resourceType: r.entity_type,
      resourceId: r.entity_id,
      revision: r.revision,
      actor: r.actor as AuditEventView['actor'],
      actorUserId: r.actor_user_id,
      metadata: r.metadata,
      createdAt: new Date(r.created_at).toISOString(),
    }));
  }
}

type AuditRow = Pick<
  SqlRow<typeof auditEvents>,
  'id' | 'action' | 'entity_type' | 'entity_id' | 'revision' | 'actor' | 'actor_user_id' | 'created_at'
> & { metadata: AuditEventView['metadata'] };
