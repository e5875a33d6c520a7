import { Body, Controller, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { Idempotent, IdempotencyRequest, type IdempotentRequestContext } from '@listing/idempotency';
import { acceptedResponse, type LocationReply } from '../../common/accepted-response';
import { ParseIdPipe } from '../../common/http-params';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { pageQuerySchema, type PageQuery } from '../../common/page-query';
import { createStoreSyncSchema, type CreateStoreSyncInput } from './store-sync.dto';
import { StoreSyncsService } from './store-syncs.service';
import { ApiDoc } from '../../common/api-doc.decorator';
import { storeSyncAcceptedSchema, storeSyncPageSchema, storeSyncViewSchema } from './store-sync-view';

/** Full syncs of a store's online products: 202 { sync, operation }; 409 while one is active. */
@Controller('v1/workspaces/:workspaceId/store-syncs')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class StoreSyncsController {
  constructor(private readonly syncs: StoreSyncsService) {}

  @Post()
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({
    summary: "Read a store's online products from the marketplace (in the background)",
    problems: ['RESOURCE_NOT_FOUND', 'STORE_NOT_ACTIVE', 'SYNC_ALREADY_ACTIVE'],
    response: storeSyncAcceptedSchema,
  })
  async create(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Body(new ZodValidationPipe(createStoreSyncSchema)) body: CreateStoreSyncInput,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    const outcome = await this.syncs.create(auth, idem, body);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }

  @Get()
  @ApiDoc({ summary: "The workspace's store syncs, newest first", response: storeSyncPageSchema })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.syncs.list(auth, query);
  }

  @Get(':syncId')
  @ApiDoc({ summary: 'One store sync', response: storeSyncViewSchema })
  get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('syncId', new ParseIdPipe('store sync')) id: string,
  ) {
    return this.syncs.get(auth, id);
  }
}
