import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { decodeCursor, toPage } from '../../common/page-cursor';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { AuditRepository, type AuditEntry } from './audit.repository';
import type { AuditEventView } from './audit-view';
import type { AuditQuery } from './audit.dto';

export type { AuditEntry } from './audit.repository';

/** The audit log every module writes to, in the caller's transaction (append-only). */
@Injectable()
export class AuditService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditRepository,
  ) {}

  append(entry: AuditEntry): Promise<void> {
    return this.audit.append(entry);
  }

  /** A page of the workspace's log, newest first, of one resource when the query names one. */
  list(
    auth: WorkspaceAuthContext,
    query: AuditQuery,
  ): Promise<{ items: AuditEventView[]; nextCursor: string | null }> {
    const after = decodeCursor(query.cursor);
    const resource =
      query.resourceType !== undefined && query.resourceId !== undefined
        ? { type: query.resourceType, id: query.resourceId }
        : undefined;
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const page = toPage(await this.audit.list(query.limit + 1, after, resource), query.limit);
      return { ...page, items: page.items.map(forMembers) };
    });
  }
}

/**
 * What a member may read of an entry. An operator's retry (OUTBOX_EVENT_RETRIED, written by the
 * CLI) names the operator, by default `user@host` of the machine it ran on: ours, not the
 * tenant's, so it is left out. Everything else in metadata is ids and codes.
 */
function forMembers(event: AuditEventView): AuditEventView {
  if (event.actor !== 'operator' || !('operator' in event.metadata)) return event;
  const { operator: _operator, ...metadata } = event.metadata;
  return { ...event, metadata };
}
