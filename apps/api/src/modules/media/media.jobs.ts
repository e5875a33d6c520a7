import { Inject, Injectable, Logger } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  defineJob,
  failureOf,
  OnOutboxDeadLetter,
  OutboxHandler,
  runRemoteStep,
  SETTLED_ELSEWHERE,
  skip,
  type JobContext,
  type RemoteStep,
  type StepFailureContext,
} from '@listing/outbox';
import { z } from 'zod';
import { ImageRejectedError, inspectImage, renderThumbnail } from '../../common/image-inspector';
import { MEDIA_CONFIG, type MediaConfig } from '../../config/media-config';
import { OBJECT_STORAGE, type ObjectStorage } from '../object-storage/object-storage.client';
import { OperationProgress } from '../operations/operation-progress.service';
import { OPERATION_FAILURES } from '../operations/operation.failures';
import { MEDIA_FAILURES } from './media.failures';
import { MediaRepository, type DerivedFacts, type MediaRow } from './media.repository';

/** Validate and derive a media (uploaded, or copied by a material transfer). The payload carries ids only. */
export const mediaProcessJob = defineJob({
  name: 'media.process',
  queue: 'media',
  schema: z.object({ mediaId: z.uuid(), operationId: z.uuid() }),
  maxAttempts: 5,
  // Storage reads and writes (a network call on S3) and image decoding take time: the remote
  // step opens short transactions around them, so no row lock or connection waits on them.
  transaction: false,
});

/**
 * Where the thumbnail of some bytes lives: a function of the workspace, the bytes' SHA-256 and the
 * derivation only, so every media of the workspace with the same bytes (an upload and a transfer
 * of one image) shares one object, derived by whichever job comes first. Per workspace, so no
 * tenant can learn from it what another stored. Media processed before keep the per-media key
 * their row records (`workspaces/{ws}/media/{id}/thumbnail-{size}.png`): downloads read the row.
 */
export function derivedThumbnailKey(workspaceId: string, sha256: string, size: number): string {
  return `workspaces/${workspaceId}/derived/sha256-${sha256}/thumbnail-${size}.png`;
}

export function originalKey(workspaceId: string, mediaId: string): string {
  return `workspaces/${workspaceId}/media/${mediaId}/original`;
}

type Payload = z.infer<typeof mediaProcessJob.schema>;
type Derived = { facts: DerivedFacts; written: boolean };
type Outcome =
  | { outcome: 'ready'; thumbnailWritten: boolean }
  | { outcome: 'failed'; code: string }
  | { outcome: 'skipped'; status: string };

/**
 * The media worker, as a remote step so that no transaction (pooled connection, row lock) is held
 * while storage is read and written or an image decoded: claim (the media is processing for this
 * operation, which becomes running), derive (no transaction), settle (processing → ready | failed,
 * for this operation only).
 *
 * Two deliveries running at once may both derive, but the thumbnail goes to a deterministic key
 * written only when absent (putIfAbsent), both read its facts from the stored copy, and the first
 * to settle wins; a crash between writing it and settling never derives it twice. The key is the
 * content's (derivedThumbnailKey), so media with the same bytes (an upload and a transfer of one
 * image) are derived once between them too.
 */
@Injectable()
export class MediaProcessJob implements RemoteStep<Payload, MediaRow, Derived, Outcome> {
  private readonly logger = new Logger('media');
  /** A failing claim or settle is the database's or a bug's: retried, then a dead letter. */
  readonly failsOn = 'call';

  constructor(
    private readonly db: Database,
    private readonly media: MediaRepository,
    private readonly operations: OperationProgress,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    @Inject(MEDIA_CONFIG) private readonly config: MediaConfig,
  ) {}

  @OutboxHandler(mediaProcessJob)
  process(payload: Payload, context: JobContext) {
    return runRemoteStep(this.db, this, payload, context);
  }

  async claim({ mediaId, operationId }: Payload) {
    const row = await this.media.findRow(mediaId, { lock: true });
    if (!row || row.status !== 'processing' || row.operation_id !== operationId) {
      return skip({ outcome: 'skipped', status: row?.status ?? 'missing' } as const);
    }
    await this.operations.running(operationId);
    return row;
  }

  /** Checks the original and derives its thumbnail (unless one is stored already). */
  async call(row: MediaRow, context: JobContext): Promise<Derived> {
    const original = await this.storage.get(row.original_key);
    if (!original) throw new ImageRejectedError('MEDIA_INVALID', 'the uploaded content is missing');
    const limits = { maxPixels: this.config.MEDIA_MAX_PIXELS };
    const facts = await inspectImage(original.body, { ...limits, expectedType: row.content_type });
    const size = this.config.MEDIA_THUMBNAIL_SIZE;
    const key = derivedThumbnailKey(context.workspaceId!, facts.checksumSha256, size);
    let written = false;
    let dims: { width: number; height: number };
    if (await this.storage.head(key)) {
      dims = await this.thumbnailDims(key);
    } else {
      const rendered = await renderThumbnail(original.body, { ...limits, size });
      const put = await this.storage.putIfAbsent(key, rendered.body, { contentType: 'image/png' });
      written = put.created;
      dims = put.created ? rendered : await this.thumbnailDims(key);
    }
    const { checksumSha256, width, height } = facts;
    const thumbnail = { thumbnailKey: key, thumbnailWidth: dims.width, thumbnailHeight: dims.height };
    return { written, facts: { checksumSha256, width, height, ...thumbnail } };
  }

  async settle(row: MediaRow, derived: Derived, { operationId }: Payload): Promise<Outcome> {
    if (!(await this.media.markReady(row.id, operationId, derived.facts))) {
      return SETTLED_ELSEWHERE;
    }
    await this.operations.succeeded(operationId);
    this.logger.log({ msg: 'media processed', media: row.id, thumbnailWritten: derived.written });
    return { outcome: 'ready', thumbnailWritten: derived.written };
  }

  permanent(error: unknown) {
    if (error instanceof ImageRejectedError) return failureOf(MEDIA_FAILURES, error.code, error.message);
    return undefined;
  }

  exhausted() {
    return MEDIA_FAILURES.MEDIA_PROCESSING_FAILED;
  }

  async fail({ mediaId, operationId }: Payload, { failure }: StepFailureContext<MediaRow>): Promise<Outcome> {
    if (!(await this.media.markFailed(mediaId, operationId, failure))) {
      return SETTLED_ELSEWHERE;
    }
    await this.operations.failed(operationId, failure);
    this.logger.log({ msg: 'media failed', media: mediaId, code: failure.code });
    return { outcome: 'failed', code: failure.code };
  }

  /** The outbox gave up on the job (e.g. an image that kills its worker every time): failed. */
  @OnOutboxDeadLetter(mediaProcessJob)
  async abandoned(payload: Payload): Promise<void> {
    await this.media.markFailed(payload.mediaId, payload.operationId, OPERATION_FAILURES.TASK_ABANDONED);
    await this.operations.failed(payload.operationId, OPERATION_FAILURES.TASK_ABANDONED);
  }

  /** Dimensions of an existing thumbnail, read from its PNG header (IHDR). */
  private async thumbnailDims(key: string): Promise<{ width: number; height: number }> {
    const existing = await this.storage.get(key);
    if (!existing || existing.body.length < 24) throw new Error('thumbnail unreadable');
    return { width: existing.body.readUInt32BE(16), height: existing.body.readUInt32BE(20) };
  }
}
