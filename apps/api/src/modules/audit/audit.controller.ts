import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiDoc } from '../../common/api-doc.decorator';
import { auditEventPageSchema } from './audit-view';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { auditQuerySchema, type AuditQuery } from './audit.dto';
import { AuditService } from './audit.service';

/** GET …/audit-events: the workspace's audit log, for any member. */
@Controller('v1/workspaces/:workspaceId/audit-events')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiDoc({
    summary: "The workspace's audit log, newest first; resourceType and resourceId (together) filter it",
    response: auditEventPageSchema,
  })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(auditQuerySchema)) query: AuditQuery,
  ) {
    return this.audit.list(auth, query);
  }
}
