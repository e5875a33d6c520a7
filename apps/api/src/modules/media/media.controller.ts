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
import { ApiDoc } from '../../common/api-doc.decorator';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { completeSchema, createUploadSchema, listQuerySchema, type CreateUpload } from './media.dto';
import { MediaTypeUnsupportedError } from './media.errors';
import { MediaService, type MediaDownload } from './media.service';
import { mediaAcceptedSchema, mediaPageSchema, mediaViewSchema } from './media-view';

interface Reply {
  header(name: string, value: string): unknown;
}

/** The reply a download sends itself (its status is 200 or 304, and its body is not JSON). */
interface DownloadReply {
  code(status: number): DownloadReply;
  header(name: string, value: string | number): DownloadReply;
  send(body?: Buffer): unknown;
}

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];

/** 200 with the bytes, or 304; either way the ETag, and revalidation on every use (private data). */
function sendDownload(reply: DownloadReply, download: MediaDownload): void {
  reply
    .header('etag', download.etag)
    .header('cache-control', 'private, no-cache')
    .header('x-content-type-options', 'nosniff');
  if (download.notModified) {
    reply.code(304).send();
    return;
  }
  reply.code(200).header('content-type', download.contentType).send(download.body);
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
  @ApiDoc({
    summary: 'Declare an upload (filename, type, size): then PUT its bytes to …/content',
    problems: ['MEDIA_TOO_LARGE', 'MEDIA_TYPE_UNSUPPORTED'],
    response: mediaViewSchema,
  })
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
  @ApiDoc({
    summary: 'Upload the declared bytes (as many times as needed until complete)',
    upload: { contentTypes: [...IMAGE_TYPES, 'application/octet-stream'] },
    problems: [
      'LENGTH_REQUIRED',
      'MEDIA_TOO_LARGE',
      'MEDIA_TYPE_UNSUPPORTED',
      'MEDIA_TYPE_MISMATCH',
      'MEDIA_SIZE_MISMATCH',
      'MEDIA_STATE_CONFLICT',
    ],
    response: mediaViewSchema,
  })
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
  @ApiDoc({
    summary: 'Start processing the uploaded bytes (checks, dimensions, thumbnail)',
    problems: ['MEDIA_STATE_CONFLICT'],
    response: mediaAcceptedSchema,
  })
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
  @ApiDoc({ summary: "The workspace's media, newest first", response: mediaPageSchema })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Query(new ZodValidationPipe(listQuerySchema)) query: z.infer<typeof listQuerySchema>,
  ) {
    return this.media.list(auth, query.limit, query.cursor);
  }

  @Get(':mediaId/content')
  @ApiDoc({
    summary: 'Download the uploaded bytes, as their content type',
    download: { contentTypes: IMAGE_TYPES },
    problems: ['MEDIA_CONTENT_UNAVAILABLE'],
  })
  async content(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('mediaId', new ParseIdPipe('media')) id: string,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res() reply: DownloadReply,
  ) {
    sendDownload(reply, await this.media.download(auth, id, 'content', ifNoneMatch));
  }

  @Get(':mediaId/thumbnail')
  @ApiDoc({
    summary: 'Download the PNG thumbnail (once the media is ready)',
    download: { contentTypes: ['image/png'] },
    problems: ['MEDIA_CONTENT_UNAVAILABLE'],
  })
  async thumbnail(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('mediaId', new ParseIdPipe('media')) id: string,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res() reply: DownloadReply,
  ) {
    sendDownload(reply, await this.media.download(auth, id, 'thumbnail', ifNoneMatch));
  }

  @Get(':mediaId')
  @ApiDoc({ summary: 'One media', response: mediaViewSchema })
  async get(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('mediaId', new ParseIdPipe('media')) id: string,
  ) {
    return this.media.get(auth, id);
  }
}
