import type { Database } from '@listing/db';
import { defineJob, OutboxHandler, type JobContext } from '@listing/outbox';
import { z } from 'zod';
import type { MediaConfig } from '../../config/media-config';
import { ImageRejectedError, inspectImage } from '../media/image-inspector';
import { mediaTypeOf } from '../media/image-sniffer';
import type { ObjectStorage } from '../object-storage/object-storage';
import { OperationsRepository } from '../operations/operations.repository';
import { MaterialTransfersRepository, type TransferFacts } from './material-transfers.repository';
import { fetchSource, SourceFetchError } from './source-fetcher';
import { parseAllowlist, type AllowEntry } from './source-url-guard';

/** Copy a collected image into object storage. The payload carries ids only, never the URL. */
export const materialTransferJob = defineJob({
  name: 'material-transfer.copy',
  queue: 'material-transfers',
  schema: z.object({ transferId: z.uuid(), operationId: z.uuid() }),
  maxAttempts: 5,
});

export function transferObjectKey(workspaceId: string, transferId: string): string {
  return `workspaces/${workspaceId}/material-transfers/${transferId}/original`;
}

type Outcome =
  | { outcome: 'succeeded'; fetched: boolean }
  | { outcome: 'failed'; code: string }
  | { outcome: 'skipped'; status: string };

/**
 * The transfer worker. Re-entrant: the inbox skips a redelivered event; a transfer already
 * finished is skipped by its conditional transitions; and the copy lands under a deterministic
 * key, so when it is already there (a crash after the write, before the commit) the source is
 * not fetched again.
 *
 * The runtime runs handlers inside the event's transaction, so this one holds it open during the
 * fetch; MATERIAL_FETCH_TIMEOUT_MS bounds that.
 */
export class MaterialTransferJobHandlers {
  private readonly transfers: MaterialTransfersRepository;
  private readonly operations: OperationsRepository;
  private readonly allowlist: readonly AllowEntry[];

  constructor(
    db: Database,
    private readonly storage: ObjectStorage,
    private readonly config: MediaConfig,
    private readonly log: (msg: string, fields: Record<string, unknown>) => void = () => undefined,
  ) {
    this.transfers = new MaterialTransfersRepository(db);
    this.operations = new OperationsRepository(db);
    this.allowlist = parseAllowlist(config.MATERIAL_SOURCE_ALLOWLIST);
  }

  @OutboxHandler(materialTransferJob)
  async copy(payload: { transferId: string; operationId: string }, context: JobContext): Promise<Outcome> {
    const { transferId, operationId } = payload;
    const row = await this.transfers.findRow(transferId, { lock: true });
    if (!row || row.operation_id !== operationId || (row.status !== 'pending' && row.status !== 'running')) {
      return { outcome: 'skipped', status: row?.status ?? 'missing' };
    }
    await this.operations.markRunning(operationId);
    await this.transfers.markRunning(transferId);
    try {
      let fetched = false;
      let stored = await this.storage.get(row.object_key);
      if (!stored) {
        const source = await fetchSource(row.source_url, {
          allowlist: this.allowlist,
          maxRedirects: this.config.MATERIAL_MAX_REDIRECTS,
          maxBytes: this.config.MEDIA_MAX_BYTES,
          timeoutMs: this.config.MATERIAL_FETCH_TIMEOUT_MS,
        });
        fetched = true;
        const facts = await inspectImage(source.body, {
          expectedType: declaredImageType(source.contentType),
          maxPixels: this.config.MEDIA_MAX_PIXELS,
        });
        await this.storage.putIfAbsent(row.object_key, source.body, { contentType: facts.contentType });
        stored = await this.storage.get(row.object_key);
        if (!stored) throw new Error('the copy vanished after it was written');
      }
      const facts = await inspectImage(stored.body, { maxPixels: this.config.MEDIA_MAX_PIXELS });
      const result: TransferFacts = {
        contentType: facts.contentType,
        size: facts.size,
        checksumSha256: facts.checksumSha256,
        width: facts.width,
        height: facts.height,
      };
      await this.transfers.markSucceeded(transferId, result);
      await this.operations.markSucceeded(operationId);
      this.log('material transfer copied', { transfer: transferId, fetched });
      return { outcome: 'succeeded', fetched };
    } catch (error) {
      const permanent =
        error instanceof ImageRejectedError || (error instanceof SourceFetchError && error.permanent);
      const final = context.attempt >= (context.job.opts.attempts ?? 1);
      if (!permanent && !final) throw error; // transient: BullMQ retries with backoff
      const failure =
        error instanceof ImageRejectedError || error instanceof SourceFetchError
          ? { code: error.code, message: error.message }
          : { code: 'TRANSFER_FAILED', message: 'the source could not be copied' };
      await this.transfers.markFailed(transferId, failure);
      await this.operations.markFailed(operationId, failure);
      this.log('material transfer failed', { transfer: transferId, code: failure.code });
      return { outcome: 'failed', code: failure.code };
    }
  }
}

/**
 * The image type a source declared, to be matched against the bytes. No header or a generic one
 * (application/octet-stream) leaves the bytes to decide; any other non-image type is a mismatch.
 */
function declaredImageType(header: string | null): string | undefined {
  const type = mediaTypeOf(header);
  if (!type || type === 'application/octet-stream' || type === 'binary/octet-stream') return undefined;
  return type;
}
