import { Body, Controller, Get, HttpCode, Param, Post, Put, Query, Res, UseGuards } from '@nestjs/common';
import { Idempotent, IdempotencyRequest, type IdempotentRequestContext } from '@listing/idempotency';
import { acceptedResponse, type LocationReply } from '../../common/accepted-response';
import { ParseIdPipe } from '../../common/http-params';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { emptyBodySchema } from '../../common/empty-body';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { pageQuerySchema, type PageQuery } from '../../common/page-query';
import {
  createStoreSchema,
  replaceCredentialsSchema,
  type CreateStoreInput,
  type ReplaceCredentialsInput,
} from './store.dto';
import { StoresService } from './stores.service';
import { ApiDoc } from '../../common/api-doc.decorator';
import {
  credentialCheckAcceptedSchema,
  storeAcceptedSchema,
  storePageSchema,
  storeViewSchema,
} from './store-view';

/**
 * Store authorizations. Commands require Idempotency-Key and answer 202 { store, operation };
 * the credential verification runs in the worker. Credentials are write-only.
 */
@Controller('v1/workspaces/:workspaceId/stores')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class StoresController {
  constructor(private readonly stores: StoresService) {}

  @Post()
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({
    summary: 'Connect a store: its credentials are verified at the marketplace in the background',
    problems: ['STORE_ALREADY_CONNECTED'],
    response: storeAcceptedSchema,
  })
  async create(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Body(new ZodValidationPipe(createStoreSchema)) body: CreateStoreInput,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    const outcome = await this.stores.create(auth, idem, body);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }

  @Put(':storeId/credentials')
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({ summary: "Replace a store's credentials (verified again)", response: storeAcceptedSchema })
  replace(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Param('storeId', new ParseIdPipe('store')) storeId: string,
    @Body(new ZodValidationPipe(replaceCredentialsSchema)) body: ReplaceCredentialsInput,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    return this.replaceCredentials(auth, idem, storeId, body, reply);
  }

  /** POST alias of PUT for clients that cannot send PUT; a key used on one is not valid on the other. */
  @Post(':storeId/credentials')
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({ summary: 'POST alias of PUT …/credentials', response: storeAcceptedSchema })
  replaceByPost(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Param('storeId', new ParseIdPipe('store')) storeId: string,
    @Body(new ZodValidationPipe(replaceCredentialsSchema)) body: ReplaceCredentialsInput,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    return this.replaceCredentials(auth, idem, storeId, body, reply);
  }

  /** Checks the store's current credentials at the marketplace again (they may have been revoked there). */
  @Post(':storeId/credential-checks')
  @HttpCode(202)
  @Idempotent({ required: true })
  @ApiDoc({
    summary: "Check the store's current credentials at the marketplace again",
    problems: ['STORE_NOT_ACTIVE'],
    response: credentialCheckAcceptedSchema,
  })
  async checkCredentials(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Param('storeId', new ParseIdPipe('store')) storeId: string,
    @Body(new ZodValidationPipe(emptyBodySchema)) _body: unknown,
    @Res({ passthrough: true }) reply: LocationReply,
  ) {
    const outcome = await this.stores.checkCredentials(auth, idem, storeId);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }

  @Get()
  @ApiDoc({ summary: "The workspace's stores, newest first", response: storePageSchema })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.stores.list(auth, query);
  }

  @Get(':storeId')
  @ApiDoc({ summary: 'One store', response: storeViewSchema })
  get(@WorkspaceAuth() auth: WorkspaceAuthContext, @Param('storeId', new ParseIdPipe('store')) id: string) {
    return this.stores.get(auth, id);
  }

  private async replaceCredentials(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    storeId: string,
    body: ReplaceCredentialsInput,
    reply: LocationReply,
  ) {
    const outcome = await this.stores.replaceCredentials(auth, idem, storeId, body);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }
}
