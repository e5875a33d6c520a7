import { z } from 'zod';
import { instant, named, pageOf, uuid } from '../../common/api-schemas';

/** One entry of a workspace's audit log, as GET …/audit-events answers it. */
export const auditEventViewSchema = named(
  'AuditEvent',
  z.object({
    id: uuid(),
    action: z.string(),
    resourceType: z
      .string()
      .describe('What the entry is about (audit_events.entity_type), as the filter names it'),
    resourceId: z.string().nullable(),
    revision: z
      .number()
      .int()
      .nullable()
      .describe('The record revision the action made or acted on, for revisioned resources'),
    actor: z.enum(['user', 'system', 'operator']),
    actorUserId: uuid().nullable(),
    metadata: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
      .describe('Ids and codes only'),
    createdAt: instant(),
  }),
  "One entry of a workspace's audit log",
);
export type AuditEventView = z.output<typeof auditEventViewSchema>;

export const auditEventPageSchema = pageOf('AuditEventPage', auditEventViewSchema);
