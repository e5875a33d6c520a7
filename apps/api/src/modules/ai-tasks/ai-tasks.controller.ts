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
import { ApiDoc } from '../../common/api-doc.decorator';
import { aiTaskAcceptedSchema, aiTaskPageSchema, aiTaskViewSchema } from './ai-task-view';

/** AI text / category / image tasks on product drafts: 202 { aiTask, operation }. */
@Controller('v1/workspaces/:workspaceId/ai-tasks')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class AiTasksController {
  constructor(private readonly tasks: AiTasksService) {}

  @Post()
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({
    summary: 'Run an AI task on a draft revision (the vendor call runs in the background)',
    problems: ['RESOURCE_NOT_FOUND'],
    response: aiTaskAcceptedSchema,
  })
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
  @ApiDoc({ summary: "The workspace's AI tasks, newest first", response: aiTaskPageSchema })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.tasks.list(auth, query);
  }

  @Get(':aiTaskId')
  @ApiDoc({ summary: 'One AI task', response: aiTaskViewSchema })
  get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('aiTaskId', new ParseIdPipe('AI task')) id: string,
  ) {
    return this.tasks.get(auth, id);
  }
}
