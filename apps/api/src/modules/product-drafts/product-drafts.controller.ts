import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Param,
  Patch,
  Post,
  Query,
  Res,
  UseGuards,
} from '@nestjs/common';
import {
  Idempotent,
  IdempotencyRequest,
  IdempotentResponse,
  type IdempotentRequestContext,
} from '@listing/idempotency';
import type { z } from 'zod';
import { ParseIdPipe, ParseRevisionPipe, etagOf, parseIfMatch } from '../../common/http-params';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { ApiDoc } from '../../common/api-doc.decorator';
import { pageQuerySchema, type PageQuery } from '../../common/page-query';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import {
  draftDataSchema,
  draftPatchSchema,
  featureExecutionSchema,
  listQuerySchema,
  productDraftFeatureIdSchema,
  type DraftData,
  type DraftPatch,
} from './product-draft.dto';
import { ProductDraftsService } from './product-drafts.service';
import {
  productDraftFeatureResultSchema,
  productDraftPageSchema,
  productDraftViewSchema,
} from './product-draft-view';

interface Reply {
  header(name: string, value: string): unknown;
}

/**
 * Product drafts (records kernel). Idempotency-Key is optional here and honoured when sent;
 * concurrent edits are serialised by If-Match/ETag on the revision.
 */
@Controller('v1/workspaces/:workspaceId/product-drafts')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class ProductDraftsController {
  constructor(private readonly drafts: ProductDraftsService) {}

  @Post()
  @HttpCode(201)
  @Idempotent({ required: false })
  @ApiDoc({
    summary: 'Create a product draft (revision 1)',
    etag: true,
    response: productDraftViewSchema,
  })
  async create(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Body(new ZodValidationPipe(draftDataSchema)) body: DraftData,
    @Res({ passthrough: true }) reply: Reply,
  ) {
    const outcome = await this.drafts.create(auth, idem, body);
    reply.header('etag', etagOf(outcome.result.revision));
    reply.header('location', `/v1/workspaces/${auth.workspaceId}/product-drafts/${outcome.result.id}`);
    return new IdempotentResponse(outcome.result, outcome.replayed);
  }

  @Patch(':draftId')
  @HttpCode(200)
  @Idempotent({ required: false, meaningHeaders: ['if-match'] })
  @ApiDoc({
    summary: 'Change a draft: a new revision',
    ifMatch: 'required',
    etag: true,
    response: productDraftViewSchema,
  })
  async update(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Param('draftId', new ParseIdPipe('product draft')) id: string,
    @Headers('if-match') ifMatch: string | undefined,
    @Body(new ZodValidationPipe(draftPatchSchema)) patch: DraftPatch,
    @Res({ passthrough: true }) reply: Reply,
  ) {
    const expected = parseIfMatch(ifMatch, true)!; // required: never null
    const outcome = await this.drafts.update(auth, idem, id, expected, patch);
    reply.header('etag', etagOf(outcome.result.revision));
    return new IdempotentResponse(outcome.result, outcome.replayed);
  }

  @Post(':draftId/features/:featureId/executions')
  @HttpCode(201)
  @Idempotent({ required: false, meaningHeaders: ['if-match'] })
  @ApiDoc({
    summary: 'Run a feature on a draft',
    ifMatch: 'optional',
    etag: true,
    problems: ['FEATURE_NOT_FOUND'],
    response: productDraftFeatureResultSchema,
    pathParams: { featureId: productDraftFeatureIdSchema },
  })
  async executeFeature(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Param('draftId', new ParseIdPipe('product draft')) id: string,
    @Param('featureId') featureId: string,
    @Headers('if-match') ifMatch: string | undefined,
    @Body(new ZodValidationPipe(featureExecutionSchema)) _body: unknown,
    @Res({ passthrough: true }) reply: Reply,
  ) {
    const outcome = await this.drafts.executeFeature(auth, idem, id, featureId, parseIfMatch(ifMatch, false));
    const { record } = outcome.result;
    reply.header('etag', etagOf(record.revision));
    // The revision the run left the draft at: its result, or the base when nothing changed.
    reply.header(
      'location',
      `/v1/workspaces/${auth.workspaceId}/product-drafts/${record.id}/revisions/${record.revision}`,
    );
    return new IdempotentResponse(outcome.result, outcome.replayed);
  }

  @Get()
  @ApiDoc({
    summary: "The workspace's drafts (current revisions), newest first",
    response: productDraftPageSchema,
  })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(listQuerySchema)) query: z.infer<typeof listQuerySchema>,
  ) {
    return this.drafts.list(auth, query.limit, query.cursor);
  }

  @Get(':draftId')
  @ApiDoc({ summary: 'The current revision of a draft', etag: true, response: productDraftViewSchema })
  async get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('draftId', new ParseIdPipe('product draft')) id: string,
    @Res({ passthrough: true }) reply: Reply,
  ) {
    const view = await this.drafts.get(auth, id);
    reply.header('etag', etagOf(view.revision));
    return view;
  }

  @Get(':draftId/revisions')
  @ApiDoc({
    summary: "A draft's revisions, newest first (each as GET …/revisions/{revision} answers it)",
    response: productDraftPageSchema,
  })
  listRevisions(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('draftId', new ParseIdPipe('product draft')) id: string,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.drafts.listRevisions(auth, id, query);
  }

  @Get(':draftId/revisions/:revision')
  @ApiDoc({ summary: 'One immutable revision of a draft', etag: true, response: productDraftViewSchema })
  async getRevision(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('draftId', new ParseIdPipe('product draft')) id: string,
    @Param('revision', new ParseRevisionPipe()) revision: number,
    @Res({ passthrough: true }) reply: Reply,
  ) {
    const view = await this.drafts.getRevision(auth, id, revision);
    reply.header('etag', etagOf(view.revision));
    return view;
  }
}
