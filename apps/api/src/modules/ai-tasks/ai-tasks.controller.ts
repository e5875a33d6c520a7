import { Body, Controller, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { Idempotent, IdempotencyRequest, type IdempotentRequestContext } from '@listing/idempotency';
import { acceptedResponse, type LocationReply } from '../../common/accepted-response';
import { ParseIdPipe } from '../../common/http-params';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { pageQuerySchema, type PageQuery } from '../../common/page-query';
import { createAiTaskSchema, type CreateAiTaskInput } from './ai-task.dto';
import { AiTasksService } from './ai-tasks.service';

/** AI text / category / image tasks on product drafts: 202 { aiTask, operation }. */
@Controller('v1/workspaces/:workspaceId/ai-tasks')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class AiTasksController {
  constructor(private readonly tasks: AiTasksService) {}

  @Post()
  @HttpCode(202)
  @Idempotent({ required: true })
  async create(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Body(new ZodValidationPipe(createAiTaskSchema)) body: CreateAiTaskInput,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    const outcome = await this.tasks.create(auth, idem, body);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }

  @Get()
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.tasks.list(auth, query);
  }

  @Get(':aiTaskId')
  get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('aiTaskId', new ParseIdPipe('AI task')) id: string,
  ) {
    return this.tasks.get(auth, id);
  }
}
