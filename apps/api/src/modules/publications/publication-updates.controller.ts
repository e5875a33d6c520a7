import { Body, Controller, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { Idempotent, IdempotencyRequest, type IdempotentRequestContext } from '@listing/idempotency';
import { acceptedResponse, type LocationReply } from '../../common/accepted-response';
import { ApiDoc } from '../../common/api-doc.decorator';
import { ParseIdPipe } from '../../common/http-params';
import { pageQuerySchema, type PageQuery } from '../../common/page-query';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { createPublicationUpdateSchema, type CreatePublicationUpdateInput } from './publication.dto';
import {
  publicationUpdateAcceptedSchema,
  publicationUpdatePageSchema,
  publicationUpdateViewSchema,
} from './publication-update-view';
import { PublicationUpdatesService } from './publication-updates.service';

/** Newer revisions pushed to a publication's live product: 202 { update, operation }. */
@Controller('v1/workspaces/:workspaceId/publications/:publicationId/updates')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class PublicationUpdatesController {
  constructor(private readonly updates: PublicationUpdatesService) {}

  @Post()
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({
    summary: 'Push a newer draft revision to the live product (applied in revision order)',
    problems: ['RESOURCE_NOT_FOUND', 'PUBLICATION_NOT_LIVE', 'REVISION_NOT_NEWER', 'STORE_NOT_ACTIVE'],
    response: publicationUpdateAcceptedSchema,
  })
  async create(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Param('publicationId', new ParseIdPipe('publication')) publicationId: string,
    @Body(new ZodValidationPipe(createPublicationUpdateSchema)) body: CreatePublicationUpdateInput,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    const outcome = await this.updates.create(auth, idem, publicationId, body);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }

  @Get()
  @ApiDoc({ summary: "A publication's updates, newest first", response: publicationUpdatePageSchema })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('publicationId', new ParseIdPipe('publication')) publicationId: string,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.updates.list(auth, publicationId, query);
  }

  @Get(':updateId')
  @ApiDoc({ summary: 'One update of a publication', response: publicationUpdateViewSchema })
  get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('publicationId', new ParseIdPipe('publication')) publicationId: string,
    @Param('updateId', new ParseIdPipe('publication update')) id: string,
  ) {
    return this.updates.get(auth, publicationId, id);
  }
}
