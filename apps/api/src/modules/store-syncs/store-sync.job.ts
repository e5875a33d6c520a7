import type { Database } from '@listing/db';
import { defineJob, OnOutboxDeadLetter, OutboxHandler, type JobContext } from '@listing/outbox';
import { z } from 'zod';
import { AuditRepository } from '../audit/audit.repository';
import { OperationsRepository } from '../operations/operations.repository';
import { ABANDONED, PermanentJobError, permanentFailure, type SafeError } from '../platform/job-failures';
import type { PlatformClient } from '../platform/platform.client';
import type { CredentialCipher } from '../stores/credential-cipher';
import { activeStoreAccess } from '../stores/store-access';
import { StoresRepository } from '../stores/stores.repository';
import { StoreSyncsRepository } from './store-syncs.repository';

export const runStoreSyncJob = defineJob({
  name: 'store-sync.run',
  queue: 'store-syncs',
  schema: z.object({ syncId: z.uuid(), operationId: z.uuid() }),
  // Re-entrant by the cursor checkpoint and idempotent upserts; listing has no side effect. Each
  // page is fetched outside any transaction and saved in a short one.
  inbox: false,
  transaction: false,
});

const PAGE_SIZE = 100;

/** A second delivery moved the sync meanwhile: retry from the stored checkpoint. */
class CheckpointMovedError extends Error {
  readonly code = 'SYNC_CHECKPOINT_MOVED';
}

const CURSOR_LOOP: SafeError = {
  code: 'SYNC_CURSOR_LOOP',
  message: 'the marketplace returned a page cursor it had already returned; the sync was stopped',
};

/**
 * Walks the store's product listing page by page. Each page is upserted and checkpointed in one
 * short transaction (the HTTP call sits between transactions), so a crash or a redelivery
 * resumes from the last committed cursor, and the last page finishes the sync atomically.
 */
export class StoreSyncHandlers {
  private readonly syncs: StoreSyncsRepository;
  private readonly stores: StoresRepository;
  private readonly operations: OperationsRepository;
  private readonly audit: AuditRepository;

  constructor(
    private readonly db: Database,
    private readonly cipher: CredentialCipher,
    private readonly platform: PlatformClient,
  ) {
    this.syncs = new StoreSyncsRepository(db);
    this.stores = new StoresRepository(db);
    this.operations = new OperationsRepository(db);
    this.audit = new AuditRepository(db);
  }

  @OutboxHandler(runStoreSyncJob)
  async run(payload: { syncId: string; operationId: string }, context: JobContext) {
    const workspaceId = context.workspaceId!;
    const { syncId, operationId } = payload;
    try {
      const plan = await this.db.withWorkspace(workspaceId, async () => {
        const sync = await this.syncs.find(syncId);
        if (!sync || sync.status === 'failed') return null;
        if (sync.status === 'succeeded') {
          await this.operations.markSucceeded(operationId);
          return null;
        }
        const access = await activeStoreAccess(this.stores, this.cipher, workspaceId, sync.storeId);
        await this.syncs.markRunning(syncId);
        await this.operations.markRunning(operationId);
        return { access, storeId: sync.storeId, cursor: sync.cursor };
      });
      if (!plan) return { outcome: 'skipped' };

      let cursor = plan.cursor;
      let pages = 0;
      const seen = new Set<string | null>([cursor]);
      for (;;) {
        const page = await this.platform.listProducts(
          plan.access.storeExternalId,
          plan.access.credentials.apiKey,
          cursor,
          PAGE_SIZE,
        );
        const next = page.nextCursor;
        // A marketplace that hands back a cursor it already gave would keep this loop (and the
        // calls) going forever: a verdict, not something a retry fixes.
        if (next !== null && seen.has(next)) throw new PermanentJobError(CURSOR_LOOP);
        seen.add(next);
        await this.db.withWorkspace(workspaceId, async () => {
          await this.syncs.upsertProducts(plan.storeId, syncId, page.items);
          if (!(await this.syncs.checkpoint(syncId, cursor, next, page.items.length))) {
            throw new CheckpointMovedError('the sync moved under this delivery');
          }
          if (next === null) {
            // A full listing ended: what it did not see is no longer on the marketplace.
            const removed = await this.syncs.deleteUnseen(plan.storeId, syncId);
            await this.operations.markSucceeded(operationId);
            await this.audit.append({
              action: 'STORE_SYNC_SUCCEEDED',
              entityType: 'store_sync',
              entityId: syncId,
              actor: 'system',
              metadata: { storeId: plan.storeId, operationId, removed },
            });
          }
        });
        pages++;
        if (next === null) return { outcome: 'succeeded', pages };
        cursor = next;
      }
    } catch (error) {
      const failure = permanentFailure(error, context, {
        code: 'SYNC_REJECTED',
        message: 'the marketplace refused the product listing',
      });
      if (!failure) throw error;
      await this.db.withWorkspace(workspaceId, async () => {
        await this.syncs.markFailed(syncId, failure.code);
        await this.operations.markFailed(operationId, failure);
      });
      return { outcome: `failed:${failure.code}` };
    }
  }

  /** The outbox gave up on the job: the sync fails and frees its store's one active slot. */
  @OnOutboxDeadLetter(runStoreSyncJob)
  async abandoned(payload: { syncId: string; operationId: string }): Promise<void> {
    await this.syncs.markFailed(payload.syncId, ABANDONED.code);
    await this.operations.markFailed(payload.operationId, ABANDONED);
  }
}
