import { Controller, Get, Param, Query, UseGuards } from '@nestjs/common';
import { Database } from '@listing/db';
import { z } from 'zod';
import { idSchema } from '../../common/id-schema';
import { ResourceNotFoundError } from '../../common/domain-errors';
import { ParseIdPipe } from '../../common/http-params';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { OperationsRepository } from './operations.repository';
import { ApiDoc } from '../../common/api-doc.decorator';
import { operationListSchema, operationViewSchema } from './operation-view';

// The resource filter is a pair: half of it would silently list every operation instead.
const listSchema = z
  .strictObject({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    resourceType: z.string().min(1).max(64).optional(),
    resourceId: idSchema.optional(),
  })
  .refine((q) => (q.resourceType === undefined) === (q.resourceId === undefined), {
    message: 'resourceType and resourceId go together',
    path: ['resourceId'],
  });

/** GET .../operations/{id}: the user-visible status of accepted asynchronous work. */
@Controller('v1/workspaces/:workspaceId/operations')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class OperationsController {
  constructor(
    private readonly db: Database,
    private readonly operations: OperationsRepository,
  ) {}

  @Get(':operationId')
  @ApiDoc({
    summary: 'Poll accepted work until `status` is succeeded or failed',
    response: operationViewSchema,
  })
  get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('operationId', new ParseIdPipe('operation')) id: string,
  ) {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const op = await this.operations.find(id);
      if (!op) throw new ResourceNotFoundError('operation');
      return op;
    });
  }

  @Get()
  @ApiDoc({
    summary: "The workspace's operations, newest first (optionally of one resource)",
    response: operationListSchema,
  })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(listSchema)) q: z.infer<typeof listSchema>,
  ) {
    const resource =
      q.resourceType !== undefined && q.resourceId !== undefined
        ? { type: q.resourceType, id: q.resourceId }
        : undefined;
    return this.db.withWorkspace(auth.workspaceId, async () => ({
      items: await this.operations.list(q.limit, resource),
    }));
  }
}
