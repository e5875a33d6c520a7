import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  IdempotencyService,
  type IdempotentOutcome,
  type IdempotentRequestContext,
} from '@listing/idempotency';
import { OutboxWriter } from '@listing/outbox';
import { ResourceNotFoundError } from '../../common/domain-errors';
import { keysetPage } from '../../common/page-cursor';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { MEDIA_CONFIG, type MediaConfig } from '../../config/media-config';
import { MaterialTransferExistsError, SourceNotAllowedError } from './material-transfers.errors';
import { AuditService } from '../audit/audit.service';
import { AsyncCommands } from '../operations/async-commands.service';
import { transferAcceptedPolicy } from './material-transfer-result-policies';
import type { TransferAccepted } from './material-transfer-view';
import type { MaterialTransferView } from './material-transfer-view';
import { materialTransferJob, transferObjectKey } from './material-transfers.jobs';
import { MaterialTransfersRepository } from './material-transfers.repository';
import {
  checkSourceUrl,
  parseAllowlist,
  sourceKeyOf,
  SourceRejectedError,
  type AllowEntry,
} from './source-url-guard';

/**
 * Material transfers: copy a collected image from an allowlisted source into object storage.
 * One transfer per workspace and source (the source key: normalised, signatures removed); a
 * second request for the same source with another Idempotency-Key is a 409
 * MATERIAL_TRANSFER_EXISTS naming the existing transfer and operation (a retry with the same key
 * replays the first 202 instead).
 */
@Injectable()
export class MaterialTransfersService {
  private readonly allowlist: readonly AllowEntry[];

  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    private readonly transfers: MaterialTransfersRepository,
    private readonly commands: AsyncCommands,
    private readonly outbox: OutboxWriter,
    private readonly audit: AuditService,
    @Inject(MEDIA_CONFIG) config: MediaConfig,
  ) {
    this.allowlist = parseAllowlist(config.MATERIAL_SOURCE_ALLOWLIST);
  }

  create(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    sourceUrl: string,
  ): Promise<IdempotentOutcome<TransferAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: transferAcceptedPolicy(this.transfers, this.commands),
      status: 202,
      // The first hop is checked here so an obviously refused source never becomes a transfer;
      // the worker checks it again, with every redirect and the resolved addresses.
      prepare: async () => {
        try {
          const url = checkSourceUrl(sourceUrl, this.allowlist);
          return { url, key: sourceKeyOf(url) };
        } catch (error) {
          if (error instanceof SourceRejectedError) throw new SourceNotAllowedError(error.reason);
          throw error;
        }
      },
      work: async ({ url, key }) => {
        const id = randomUUID();
        const operationId = randomUUID();
        await this.commands.createOperation({
          id: operationId,
          kind: 'material-transfer.copy',
          resourceType: 'material_transfer',
          resourceId: id,
          createdBy: auth.userId,
        });
        const inserted = await this.transfers.insertUnlessExists({
          id,
          sourceUrl: url.href,
          sourceKey: key,
          objectKey: transferObjectKey(auth.workspaceId, id),
          operationId,
          createdBy: auth.userId,
        });
        // Throwing rolls back the operation inserted above with everything else.
        if (!inserted.inserted) throw new MaterialTransferExistsError(inserted.id, inserted.operationId);
        // Ids only: the source URL may carry a signature (source_key is the stripped form).
        await this.audit.append({
          action: 'MATERIAL_TRANSFER_CREATED',
          entityType: 'material_transfer',
          entityId: id,
          actorUserId: auth.userId,
          metadata: { operationId },
        });
        await this.outbox.appendJob(materialTransferJob, { transferId: id, operationId });
        const [transfer, operation] = await Promise.all([
          this.transfers.findAsAccepted(id),
          this.commands.operationAsAccepted(operationId),
        ]);
        return { transfer: transfer!, operation: operation! };
      },
    });
  }

  get(auth: WorkspaceAuthContext, id: string): Promise<MaterialTransferView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const view = await this.transfers.find(id);
      if (!view) throw new ResourceNotFoundError('material transfer');
      return view;
    });
  }

  list(auth: WorkspaceAuthContext, limit: number, cursor?: string) {
    return this.db.withWorkspace(auth.workspaceId, () =>
      keysetPage(limit, cursor, (n, after) => this.transfers.list(n, after)),
    );
  }
}
