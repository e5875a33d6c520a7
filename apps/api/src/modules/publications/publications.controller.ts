import { Body, Controller, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { Idempotent, IdempotencyRequest, type IdempotentRequestContext } from '@listing/idempotency';
import { acceptedResponse, type LocationReply } from '../../common/accepted-response';
import { ParseIdPipe } from '../../common/http-params';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { emptyBodySchema } from '../../common/empty-body';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { ApiDoc } from '../../common/api-doc.decorator';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { pageQuerySchema, type PageQuery } from '../../common/page-query';
import { createPublicationSchema, type CreatePublicationInput } from './publication.dto';
import { PublicationsService } from './publications.service';
import { publicationAcceptedSchema, publicationPageSchema, publicationViewSchema } from './publication-view';

/**
 * First publications of product drafts to stores, and retries of those whose outcome the
 * marketplace left unknown: 202 { publication, operation }.
 */
@Controller('v1/workspaces/:workspaceId/publications')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class PublicationsController {
  constructor(private readonly publications: PublicationsService) {}

  @Post()
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({
    summary: 'Publish a draft revision to a store (the marketplace call runs in the background)',
    problems: ['RESOURCE_NOT_FOUND', 'ALREADY_PUBLISHED', 'STORE_NOT_ACTIVE'],
    response: publicationAcceptedSchema,
  })
  async create(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Body(new ZodValidationPipe(createPublicationSchema)) body: CreatePublicationInput,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    const outcome = await this.publications.create(auth, idem, body);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }

  @Post(':publicationId/retry')
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({
    summary: 'Send the create of a publication whose outcome is unknown again (same provider key)',
    problems: ['PUBLICATION_NOT_RETRYABLE', 'STORE_NOT_ACTIVE'],
    response: publicationAcceptedSchema,
  })
  async retry(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Param('publicationId', new ParseIdPipe('publication')) id: string,
    @Body(new ZodValidationPipe(emptyBodySchema)) _body: unknown,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    const outcome = await this.publications.retry(auth, idem, id);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }

  @Get()
  @ApiDoc({ summary: "The workspace's publications, newest first", response: publicationPageSchema })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.publications.list(auth, query);
  }

  @Get(':publicationId')
  @ApiDoc({ summary: 'One publication', response: publicationViewSchema })
  get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('publicationId', new ParseIdPipe('publication')) id: string,
  ) {
    return this.publications.get(auth, id);
  }
}
