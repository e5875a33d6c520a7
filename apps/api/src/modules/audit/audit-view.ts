/** One entry of a workspace's audit log, as GET …/audit-events answers it. */
export interface AuditEventView {
  id: string;
  action: string;
  /** What the entry is about (audit_events.entity_type / entity_id), as the filter names it. */
  resourceType: string;
  resourceId: string | null;
  /** The record revision the action made or acted on, for revisioned resources. */
  revision: number | null;
  actor: 'user' | 'system' | 'operator';
  actorUserId: string | null;
  /** Ids and codes only (AuditEntry.metadata). */
  metadata: Record<string, string | number | boolean | null>;
  createdAt: string;
}
