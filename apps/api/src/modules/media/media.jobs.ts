import type { Database } from '@listing/db';
import { defineJob, OnOutboxDeadLetter, OutboxHandler, type JobContext } from '@listing/outbox';
import { z } from 'zod';
import type { MediaConfig } from '../../config/media-config';
import type { ObjectStorage } from '../object-storage/object-storage';
import { OperationsRepository } from '../operations/operations.repository';
import { ABANDONED } from '../platform/job-failures';
import { ImageRejectedError, inspectImage, renderThumbnail } from './image-inspector';
import { MediaRepository } from './media.repository';

/** Validate and derive an uploaded media. The payload carries ids only. */
export const mediaProcessJob = defineJob({
  name: 'media.process',
  queue: 'media',
  schema: z.object({ mediaId: z.uuid(), operationId: z.uuid() }),
  maxAttempts: 5,
});

/** Where a media's derived thumbnail lives: a function of the media and the derivation only. */
export function thumbnailKey(workspaceId: string, mediaId: string, size: number): string {
  return `workspaces/${workspaceId}/media/${mediaId}/thumbnail-${size}.png`;
}

export function originalKey(workspaceId: string, mediaId: string): string {
  return `workspaces/${workspaceId}/media/${mediaId}/original`;
}

type Outcome =
  | { outcome: 'ready'; thumbnailWritten: boolean }
  | { outcome: 'failed'; code: string }
  | { outcome: 'skipped'; status: string };

/**
 * The media worker. Re-entrant on three levels: the runtime's inbox skips a redelivered event;
 * the media row's conditional transition (processing → ready|failed, for this operation) skips
 * work already done; the thumbnail goes to a deterministic key and is written only when absent,
 * so a crash between writing it and committing never derives it twice.
 */
export class MediaJobHandlers {
  private readonly media: MediaRepository;
  private readonly operations: OperationsRepository;

  constructor(
    db: Database,
    private readonly storage: ObjectStorage,
    private readonly config: MediaConfig,
    private readonly log: (msg: string, fields: Record<string, unknown>) => void = () => undefined,
  ) {
    this.media = new MediaRepository(db);
    this.operations = new OperationsRepository(db);
  }

  @OutboxHandler(mediaProcessJob)
  async process(payload: { mediaId: string; operationId: string }, context: JobContext): Promise<Outcome> {
    const { mediaId, operationId } = payload;
    const row = await this.media.findRow(mediaId, { lock: true });
    if (!row || row.status !== 'processing' || row.operation_id !== operationId) {
      return { outcome: 'skipped', status: row?.status ?? 'missing' };
    }
    await this.operations.markRunning(operationId);
    try {
      const original = await this.storage.get(row.original_key);
      if (!original) throw new ImageRejectedError('MEDIA_INVALID', 'the uploaded content is missing');
      const facts = await inspectImage(original.body, {
        expectedType: row.content_type,
        maxPixels: this.config.MEDIA_MAX_PIXELS,
      });
      const key = thumbnailKey(context.workspaceId!, mediaId, this.config.MEDIA_THUMBNAIL_SIZE);
      let thumb = await this.storage.head(key);
      let written = false;
      let dims: { width: number; height: number };
      if (thumb) {
        dims = await this.thumbnailDims(key);
      } else {
        const rendered = await renderThumbnail(original.body, {
          size: this.config.MEDIA_THUMBNAIL_SIZE,
          maxPixels: this.config.MEDIA_MAX_PIXELS,
        });
        const put = await this.storage.putIfAbsent(key, rendered.body, { contentType: 'image/png' });
        thumb = put.object;
        written = put.created;
        dims = put.created ? rendered : await this.thumbnailDims(key);
      }
      await this.media.markReady(mediaId, operationId, {
        checksumSha256: facts.checksumSha256,
        width: facts.width,
        height: facts.height,
        thumbnailKey: thumb.key,
        thumbnailWidth: dims.width,
        thumbnailHeight: dims.height,
      });
      await this.operations.markSucceeded(operationId);
      this.log('media processed', { media: mediaId, thumbnailWritten: written });
      return { outcome: 'ready', thumbnailWritten: written };
    } catch (error) {
      const final = context.attempt >= (context.job.opts.attempts ?? 1);
      if (!(error instanceof ImageRejectedError) && !final) throw error; // transient: BullMQ retries
      // A definitive verdict, or the last attempt: finish the operation instead of leaving it running.
      const failure =
        error instanceof ImageRejectedError
          ? { code: error.code, message: error.message }
          : { code: 'MEDIA_PROCESSING_FAILED', message: 'the media could not be processed' };
      await this.media.markFailed(mediaId, operationId, failure);
      await this.operations.markFailed(operationId, failure);
      this.log('media failed', { media: mediaId, code: failure.code });
      return { outcome: 'failed', code: failure.code };
    }
  }

  /** The outbox gave up on the job (e.g. an image that kills its worker every time): failed. */
  @OnOutboxDeadLetter(mediaProcessJob)
  async abandoned(payload: { mediaId: string; operationId: string }): Promise<void> {
    await this.media.markFailed(payload.mediaId, payload.operationId, ABANDONED);
    await this.operations.markFailed(payload.operationId, ABANDONED);
  }

  /** Dimensions of an existing thumbnail, read from its PNG header (IHDR). */
  private async thumbnailDims(key: string): Promise<{ width: number; height: number }> {
    const existing = await this.storage.get(key);
    if (!existing || existing.body.length < 24) throw new Error('thumbnail unreadable');
    return { width: existing.body.readUInt32BE(16), height: existing.body.readUInt32BE(20) };
  }
}
