import { Injectable, Logger } from '@nestjs/common';
import { defineJob, OutboxHandler } from '@listing/outbox';
import { z } from 'zod';
import { MediaIntake } from '../media/media-intake.service';
import { lastPathSegment } from './material-transfers.jobs';
import { MaterialTransfersRepository } from './material-transfers.repository';

/**
 * The media of a transfer that succeeded before transfers made one (sql/026). Only
 * sql/028_transfer_media_backfill.sql appends it, once per such transfer at the upgrade.
 */
export const transferMediaBackfillJob = defineJob({
  name: 'material-transfer.media-backfill',
  queue: 'material-transfers',
  schema: z.object({ transferId: z.uuid() }),
  maxAttempts: 5,
});

type Payload = z.infer<typeof transferMediaBackfillJob.schema>;
export type BackfillOutcome =
  { outcome: 'created'; mediaId: string } | { outcome: 'skipped'; reason: string };

/**
 * Gives an old succeeded transfer the media its settlement makes today, in the job's transaction
 * and under the transfer's row lock: the media is made at most once, whatever the redeliveries or
 * a second backfill event, and a transfer that already names one is left alone.
 */
@Injectable()
export class TransferMediaBackfillJob {
  private readonly logger = new Logger('material-transfers');

  constructor(
    private readonly transfers: MaterialTransfersRepository,
    private readonly mediaIntake: MediaIntake,
  ) {}

  @OutboxHandler(transferMediaBackfillJob)
  async backfill({ transferId }: Payload): Promise<BackfillOutcome> {
    const row = await this.transfers.findRow(transferId, { lock: true });
    if (!row) return { outcome: 'skipped', reason: 'missing' };
    if (row.status !== 'succeeded') return { outcome: 'skipped', reason: row.status };
    if (row.media_id !== null) return { outcome: 'skipped', reason: 'has a media' };
    if (row.content_type === null || row.size === null) {
      return { outcome: 'skipped', reason: 'no content facts' }; // every settlement recorded them
    }
    const mediaId = await this.mediaIntake.fromTransfer({
      transferId,
      objectKey: row.object_key,
      contentType: row.content_type,
      size: Number(row.size),
      filename: lastPathSegment(row.source_key),
      createdBy: row.created_by,
    });
    if (!(await this.transfers.attachMedia(transferId, mediaId))) {
      throw new Error('the locked transfer changed under its lock');
    }
    this.logger.log({ msg: 'material transfer media backfilled', transfer: transferId, mediaId });
    return { outcome: 'created', mediaId };
  }
}
