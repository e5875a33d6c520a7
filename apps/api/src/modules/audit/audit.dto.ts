import { z } from 'zod';
import { idSchema } from '../../common/id-schema';
import { pageQuerySchema } from '../../common/page-query';

/**
 * GET …/audit-events: a page, optionally of one resource's entries. The resource filter is a
 * pair, as GET …/operations' is: half of it would silently list the whole log instead.
 */
export const auditQuerySchema = pageQuerySchema
  .extend({
    resourceType: z.string().min(1).max(64).optional(),
    resourceId: idSchema.optional(),
  })
  .refine((q) => (q.resourceType === undefined) === (q.resourceId === undefined), {
    message: 'resourceType and resourceId go together',
    path: ['resourceId'],
  });
export type AuditQuery = z.infer<typeof auditQuerySchema>;
