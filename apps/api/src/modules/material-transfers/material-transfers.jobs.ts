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
import { ImageRejectedError, inspectImage } from '../../common/image-inspector';
import { mediaTypeOf } from '../../common/image-sniffer';
import { MEDIA_CONFIG, type MediaConfig } from '../../config/media-config';
import { MediaIntake } from '../media/media-intake.service';
import { OBJECT_STORAGE, type ObjectStorage } from '../object-storage/object-storage.client';
import { OperationProgress } from '../operations/operation-progress.service';
import { OPERATION_FAILURES } from '../operations/operation.failures';
import { TRANSFER_FAILURES } from './material-transfers.failures';
import {
  MaterialTransfersRepository,
  type TransferFacts,
  type TransferRow,
} from './material-transfers.repository';
import { fetchSource, SourceFetchError } from './source-fetcher';
import { parseAllowlist, type AllowEntry } from './source-url-guard';

/** Copy a collected image into object storage. The payload carries ids only, never the URL. */
export const materialTransferJob = defineJob({
  name: 'material-transfer.copy',
  queue: 'material-transfers',
  schema: z.object({ transferId: z.uuid(), operationId: z.uuid() }),
  maxAttempts: 5,
  // The fetch waits on a remote server: the remote step opens short transactions around it.
  transaction: false,
});

export function transferObjectKey(workspaceId: string, transferId: string): string {
  return `workspaces/${workspaceId}/material-transfers/${transferId}/original`;
}

type Payload = z.infer<typeof materialTransferJob.schema>;
type Copied = { result: TransferFacts; fetched: boolean };
type Outcome =
  | { outcome: 'succeeded'; fetched: boolean; mediaId: string }
  | { outcome: 'failed'; code: string }
  | { outcome: 'skipped'; status: string };

/**
 * The transfer worker, as a remote step so that no transaction (pooled connection, row lock) is
 * held while a remote server is fetched: mark the transfer running, copy (no transaction), settle
 * (succeeded, and the media the copy becomes, whose own media.process job derives it).
 *
 * Two deliveries running at once (a stalled job retried while the first still runs) may both
 * fetch, but putIfAbsent keeps one copy under the deterministic key and both read their facts
 * from it; when the copy is already there (a crash after the write, before the settle) the source
 * is not fetched again.
 */
@Injectable()
export class MaterialTransferJob implements RemoteStep<Payload, TransferRow, Copied, Outcome> {
  private readonly logger = new Logger('material-transfers');
  /** A failing claim or settle is the database's or a bug's: retried, then a dead letter. */
  readonly failsOn = 'call';
  private readonly allowlist: readonly AllowEntry[];

  constructor(
    private readonly db: Database,
    private readonly transfers: MaterialTransfersRepository,
    private readonly operations: OperationProgress,
    private readonly mediaIntake: MediaIntake,
    @Inject(OBJECT_STORAGE) private readonly storage: ObjectStorage,
    @Inject(MEDIA_CONFIG) private readonly config: MediaConfig,
  ) {
    this.allowlist = parseAllowlist(config.MATERIAL_SOURCE_ALLOWLIST);
  }

  @OutboxHandler(materialTransferJob)
  copy(payload: Payload, context: JobContext) {
    return runRemoteStep(this.db, this, payload, context);
  }

  async claim({ transferId, operationId }: Payload) {
    const row = await this.transfers.findRow(transferId, { lock: true });
    const open = row?.status === 'pending' || row?.status === 'running';
    if (!row || row.operation_id !== operationId || !open) {
      return skip({ outcome: 'skipped', status: row?.status ?? 'missing' } as const);
    }
    await this.operations.running(operationId);
    await this.transfers.markRunning(transferId);
    return row;
  }

  /** Fetches the source into the transfer's key unless a copy is already there. */
  async call(row: TransferRow): Promise<Copied> {
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
      const checked = await inspectImage(source.body, {
        expectedType: declaredImageType(source.contentType),
        maxPixels: this.config.MEDIA_MAX_PIXELS,
      });
      await this.storage.putIfAbsent(row.object_key, source.body, { contentType: checked.contentType });
      stored = await this.storage.get(row.object_key);
      if (!stored) throw new Error('the copy vanished after it was written');
    }
    const facts = await inspectImage(stored.body, { maxPixels: this.config.MEDIA_MAX_PIXELS });
    const { contentType, size, checksumSha256, width, height } = facts;
    return { fetched, result: { contentType, size, checksumSha256, width, height } };
  }

  /**
   * The success transition and, only when it applied, the media the copy becomes, in the same
   * transaction: a redelivery or a concurrent delivery finds the transfer settled and makes none,
   * and a crash before the commit leaves neither.
   */
  async settle(row: TransferRow, copied: Copied, { operationId }: Payload): Promise<Outcome> {
    const facts = copied.result;
    if (!(await this.transfers.markSucceeded(row.id, facts))) {
      return SETTLED_ELSEWHERE;
    }
    const mediaId = await this.mediaIntake.fromTransfer({
      transferId: row.id,
      objectKey: row.object_key,
      contentType: facts.contentType,
      size: facts.size,
      filename: lastPathSegment(row.source_key),
      createdBy: row.created_by,
    });
    // markSucceeded just applied in this transaction: the transfer has no media yet.
    if (!(await this.transfers.attachMedia(row.id, mediaId))) {
      throw new Error('the succeeded transfer already names a media');
    }
    await this.operations.succeeded(operationId);
    this.logger.log({ msg: 'material transfer copied', transfer: row.id, fetched: copied.fetched, mediaId });
    return { outcome: 'succeeded', fetched: copied.fetched, mediaId };
  }

  permanent(error: unknown) {
    if (error instanceof ImageRejectedError || (error instanceof SourceFetchError && error.permanent)) {
      return failureOf(TRANSFER_FAILURES, error.code, error.message);
    }
    return undefined;
  }

  /** Out of attempts on a fetch error: its own code and message; anything else is generic. */
  exhausted(error: unknown) {
    return error instanceof SourceFetchError
      ? failureOf(TRANSFER_FAILURES, error.code, error.message)
      : TRANSFER_FAILURES.TRANSFER_FAILED;
  }

  async fail({ transferId, operationId }: Payload, { failure }: StepFailureContext<TransferRow>) {
    if (!(await this.transfers.markFailed(transferId, failure))) {
      return SETTLED_ELSEWHERE;
    }
    await this.operations.failed(operationId, failure);
    this.logger.log({ msg: 'material transfer failed', transfer: transferId, code: failure.code });
    return { outcome: 'failed', code: failure.code } as const;
  }

  /** The outbox gave up on the job: the transfer fails; its source can be sent again (sql/016). */
  @OnOutboxDeadLetter(materialTransferJob)
  async abandoned(payload: Payload): Promise<void> {
    await this.transfers.markFailed(payload.transferId, OPERATION_FAILURES.TASK_ABANDONED);
    await this.operations.failed(payload.operationId, OPERATION_FAILURES.TASK_ABANDONED);
  }
}

/** The source's file name, for people: its last path segment, decoded when it decodes. */
export function lastPathSegment(sourceKey: string): string {
  const segment = new URL(sourceKey).pathname.split('/').pop() ?? '';
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // a malformed escape: the name as it stands
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
