import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Put,
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
import { acceptedResponse } from '../../common/accepted-response';
import { ParseIdPipe } from '../../common/http-params';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { completeSchema, createUploadSchema, listQuerySchema, type CreateUpload } from './media.dto';
import { MediaTypeUnsupportedError } from './media.errors';
import { MediaService } from './media.service';

interface Reply {
  header(name: string, value: string): unknown;
}

/**
 * Media: POST creates an upload (201), PUT .../content takes the raw bytes (application/octet-stream
 * or image/*; parsed as a Buffer by the parser registered in app.factory.ts, bounded by
 * MEDIA_MAX_BYTES), POST .../complete accepts the processing (202 + operation).
 */
@Controller('v1/workspaces/:workspaceId/media')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class MediaController {
  constructor(private readonly media: MediaService) {}

  @Post()
  @HttpCode(201)
  @Idempotent({ required: true })
  async create(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Body(new ZodValidationPipe(createUploadSchema)) body: CreateUpload,
    @Res({ passthrough: true }) reply: Reply,
  ) {
    const outcome = await this.media.createUpload(auth, idem, body);
    reply.header('location', `/v1/workspaces/${auth.workspaceId}/media/${outcome.result.id}`);
    return new IdempotentResponse(outcome.result, outcome.replayed);
  }

  // Not an Idempotency-Key route: PUT of the same bytes is naturally idempotent, and the body is
  // raw bytes that must not be canonicalised into a fingerprint.
  @Put(':mediaId/content')
  @HttpCode(200)
  async uploadContent(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('mediaId', new ParseIdPipe('media')) id: string,
    @Headers('content-length') contentLength: string | undefined,
    @Body() body: unknown,
  ) {
    if (!Buffer.isBuffer(body)) throw new MediaTypeUnsupportedError();
    return this.media.uploadContent(auth, id, contentLength, body);
  }

  @Post(':mediaId/complete')
  @HttpCode(202)
  @Idempotent({ required: true })
  async complete(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @IdempotencyRequest() idem: IdempotentRequestContext,
    @Param('mediaId', new ParseIdPipe('media')) id: string,
    @Body(new ZodValidationPipe(completeSchema)) _body: unknown,
    @Res({ passthrough: true }) reply: Reply,
  ) {
    const outcome = await this.media.complete(auth, idem, id);
    return acceptedResponse(reply, auth.workspaceId, outcome);
  }

  @Get()
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(listQuerySchema)) query: z.infer<typeof listQuerySchema>,
  ) {
    return this.media.list(auth, query.limit, query.cursor);
  }

  @Get(':mediaId')
  async get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('mediaId', new ParseIdPipe('media')) id: string,
  ) {
    return this.media.get(auth, id);
  }
}
