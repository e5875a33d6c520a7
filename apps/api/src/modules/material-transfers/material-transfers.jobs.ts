import type { Database } from '@listing/db';
import { defineJob, OnOutboxDeadLetter, OutboxHandler, type JobContext } from '@listing/outbox';
import { z } from 'zod';
import type { MediaConfig } from '../../config/media-config';
import { ImageRejectedError, inspectImage } from '../media/image-inspector';
import { mediaTypeOf } from '../media/image-sniffer';
import type { ObjectStorage } from '../object-storage/object-storage';
import { OperationsRepository } from '../operations/operations.repository';
import { ABANDONED } from '../platform/job-failures';
import { MaterialTransfersRepository, type TransferFacts } from './material-transfers.repository';
import { fetchSource, SourceFetchError } from './source-fetcher';
import { parseAllowlist, type AllowEntry } from './source-url-guard';

/** Copy a collected image into object storage. The payload carries ids only, never the URL. */
export const materialTransferJob = defineJob({
  name: 'material-transfer.copy',
  queue: 'material-transfers',
  schema: z.object({ transferId: z.uuid(), operationId: z.uuid() }),
  maxAttempts: 5,
  // The fetch waits on a remote server: the handler opens its own short transactions around it.
  transaction: false,
});

export function transferObjectKey(workspaceId: string, transferId: string): string {
  return `workspaces/${workspaceId}/material-transfers/${transferId}/original`;
}

type Outcome =
  | { outcome: 'succeeded'; fetched: boolean }
  | { outcome: 'failed'; code: string }
  | { outcome: 'skipped'; status: string };

/**
 * The transfer worker, in three steps so that no transaction (pooled connection, row lock) is
 * held while a remote server is fetched: mark the transfer running (short transaction), copy
 * (no transaction), settle it (short transaction).
 *
 * Re-entrant without an inbox: a transfer already settled is skipped by its conditional
 * transitions; two deliveries running at once (a stalled job retried while the first still runs)
 * may both fetch, but putIfAbsent keeps one copy under the deterministic key and both read their
 * facts from it, so whichever settles first records the stored bytes; and when the copy is
 * already there (a crash after the write, before the settle) the source is not fetched again.
 */
export class MaterialTransferJobHandlers {
  private readonly transfers: MaterialTransfersRepository;
  private readonly operations: OperationsRepository;
  private readonly allowlist: readonly AllowEntry[];

  constructor(
    private readonly db: Database,
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
    const inWorkspace = <T>(fn: () => Promise<T>) => this.db.withWorkspace(context.workspaceId!, fn);
    const claimed = await inWorkspace(async () => {
      const row = await this.transfers.findRow(transferId, { lock: true });
      if (
        !row ||
        row.operation_id !== operationId ||
        (row.status !== 'pending' && row.status !== 'running')
      ) {
        return { row: null, status: row?.status ?? 'missing' };
      }
      await this.operations.markRunning(operationId);
      await this.transfers.markRunning(transferId);
      return { row, status: row.status };
    });
    const row = claimed.row;
    if (!row) return { outcome: 'skipped', status: claimed.status };

    let copied: { result: TransferFacts; fetched: boolean };
    try {
      copied = await this.copyToStorage(row.source_url, row.object_key);
    } catch (error) {
      const permanent =
        error instanceof ImageRejectedError || (error instanceof SourceFetchError && error.permanent);
      const final = context.attempt >= (context.job.opts.attempts ?? 1);
      if (!permanent && !final) throw error; // transient: BullMQ retries with backoff
      const failure =
        error instanceof ImageRejectedError || error instanceof SourceFetchError
          ? { code: error.code, message: error.message }
          : { code: 'TRANSFER_FAILED', message: 'the source could not be copied' };
      const settled = await inWorkspace(async () => {
        if (!(await this.transfers.markFailed(transferId, failure))) return false;
        await this.operations.markFailed(operationId, failure);
        return true;
      });
      if (!settled) return { outcome: 'skipped', status: 'settled by another delivery' };
      this.log('material transfer failed', { transfer: transferId, code: failure.code });
      return { outcome: 'failed', code: failure.code };
    }
    const settled = await inWorkspace(async () => {
      if (!(await this.transfers.markSucceeded(transferId, copied.result))) return false;
      await this.operations.markSucceeded(operationId);
      return true;
    });
    if (!settled) return { outcome: 'skipped', status: 'settled by another delivery' };
    this.log('material transfer copied', { transfer: transferId, fetched: copied.fetched });
    return { outcome: 'succeeded', fetched: copied.fetched };
  }

  /** The outbox gave up on the job: the transfer fails; its source can be sent again (sql/016). */
  @OnOutboxDeadLetter(materialTransferJob)
  async abandoned(payload: { transferId: string; operationId: string }): Promise<void> {
    await this.transfers.markFailed(payload.transferId, ABANDONED);
    await this.operations.markFailed(payload.operationId, ABANDONED);
  }

  /** Fetches the source into `objectKey` unless a copy is already there; facts of the stored copy. */
  private async copyToStorage(
    sourceUrl: string,
    objectKey: string,
  ): Promise<{ result: TransferFacts; fetched: boolean }> {
    let fetched = false;
    let stored = await this.storage.get(objectKey);
    if (!stored) {
      const source = await fetchSource(sourceUrl, {
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
      await this.storage.putIfAbsent(objectKey, source.body, { contentType: facts.contentType });
      stored = await this.storage.get(objectKey);
      if (!stored) throw new Error('the copy vanished after it was written');
    }
    const facts = await inspectImage(stored.body, { maxPixels: this.config.MEDIA_MAX_PIXELS });
    return {
      fetched,
      result: {
        contentType: facts.contentType,
        size: facts.size,
        checksumSha256: facts.checksumSha256,
        width: facts.width,
        height: facts.height,
      },
    };
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
