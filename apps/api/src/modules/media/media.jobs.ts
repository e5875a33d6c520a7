import type { Database } from '@listing/db';
import { defineJob, OnOutboxDeadLetter, OutboxHandler, type JobContext } from '@listing/outbox';
import { z } from 'zod';
import type { MediaConfig } from '../../config/media-config';
import type { ObjectStorage } from '../object-storage/object-storage';
import { OperationsRepository } from '../operations/operations.repository';
import { ABANDONED } from '../platform/job-failures';
import { ImageRejectedError, inspectImage, renderThumbnail } from './image-inspector';
import { MediaRepository, type DerivedFacts } from './media.repository';

/** Validate and derive an uploaded media. The payload carries ids only. */
export const mediaProcessJob = defineJob({
  name: 'media.process',
  queue: 'media',
  schema: z.object({ mediaId: z.uuid(), operationId: z.uuid() }),
  maxAttempts: 5,
  // Storage reads and writes (a network call on S3) and image decoding take time: the handler
  // opens its own short transactions around them, so no row lock or connection waits on them.
  transaction: false,
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
 * The media worker, in three steps so that no transaction (pooled connection, row lock) is held
 * while storage is read and written or an image decoded: claim (short transaction: the media is
 * processing for this operation, which becomes running), derive (no transaction), settle (short
 * transaction: processing → ready | failed, for this operation only).
 *
 * Re-entrant without an inbox: a settled media is skipped by the conditional transitions; two
 * deliveries running at once may both derive, but the thumbnail goes to a deterministic key
 * written only when absent (putIfAbsent), both read its facts from the stored copy, and the first
 * to settle wins; a crash between writing it and settling never derives it twice.
 */
export class MediaJobHandlers {
  private readonly media: MediaRepository;
  private readonly operations: OperationsRepository;

  constructor(
    private readonly db: Database,
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
    const inWorkspace = <T>(fn: () => Promise<T>) => this.db.withWorkspace(context.workspaceId!, fn);
    const claimed = await inWorkspace(async () => {
      const row = await this.media.findRow(mediaId, { lock: true });
      if (!row || row.status !== 'processing' || row.operation_id !== operationId) {
        return { row: null, status: row?.status ?? 'missing' };
      }
      await this.operations.markRunning(operationId);
      return { row, status: row.status };
    });
    const row = claimed.row;
    if (!row) return { outcome: 'skipped', status: claimed.status };

    let derived: { facts: DerivedFacts; written: boolean };
    try {
      derived = await this.derive(context.workspaceId!, mediaId, row.original_key, row.content_type);
    } catch (error) {
      const final = context.attempt >= (context.job.opts.attempts ?? 1);
      if (!(error instanceof ImageRejectedError) && !final) throw error; // transient: BullMQ retries
      // A definitive verdict, or the last attempt: finish the operation instead of leaving it running.
      const failure =
        error instanceof ImageRejectedError
          ? { code: error.code, message: error.message }
          : { code: 'MEDIA_PROCESSING_FAILED', message: 'the media could not be processed' };
      const settled = await inWorkspace(async () => {
        if (!(await this.media.markFailed(mediaId, operationId, failure))) return false;
        await this.operations.markFailed(operationId, failure);
        return true;
      });
      if (!settled) return { outcome: 'skipped', status: 'settled by another delivery' };
      this.log('media failed', { media: mediaId, code: failure.code });
      return { outcome: 'failed', code: failure.code };
    }
    const settled = await inWorkspace(async () => {
      if (!(await this.media.markReady(mediaId, operationId, derived.facts))) return false;
      await this.operations.markSucceeded(operationId);
      return true;
    });
    if (!settled) return { outcome: 'skipped', status: 'settled by another delivery' };
    this.log('media processed', { media: mediaId, thumbnailWritten: derived.written });
    return { outcome: 'ready', thumbnailWritten: derived.written };
  }

  /** Checks the original and derives its thumbnail (unless one is stored already). No transaction. */
  private async derive(
    workspaceId: string,
    mediaId: string,
    originalKeyOfRow: string,
    contentType: string,
  ): Promise<{ facts: DerivedFacts; written: boolean }> {
    const original = await this.storage.get(originalKeyOfRow);
    if (!original) throw new ImageRejectedError('MEDIA_INVALID', 'the uploaded content is missing');
    const facts = await inspectImage(original.body, {
      expectedType: contentType,
      maxPixels: this.config.MEDIA_MAX_PIXELS,
    });
    const key = thumbnailKey(workspaceId, mediaId, this.config.MEDIA_THUMBNAIL_SIZE);
    let written = false;
    let dims: { width: number; height: number };
    if (await this.storage.head(key)) {
      dims = await this.thumbnailDims(key);
    } else {
      const rendered = await renderThumbnail(original.body, {
        size: this.config.MEDIA_THUMBNAIL_SIZE,
        maxPixels: this.config.MEDIA_MAX_PIXELS,
      });
      const put = await this.storage.putIfAbsent(key, rendered.body, { contentType: 'image/png' });
      written = put.created;
      dims = put.created ? rendered : await this.thumbnailDims(key);
    }
    return {
      written,
      facts: {
        checksumSha256: facts.checksumSha256,
        width: facts.width,
        height: facts.height,
        thumbnailKey: key,
        thumbnailWidth: dims.width,
        thumbnailHeight: dims.height,
      },
    };
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
