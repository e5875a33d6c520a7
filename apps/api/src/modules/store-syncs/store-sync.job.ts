import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  defineJob,
  OnOutboxDeadLetter,
  OutboxHandler,
  PermanentStepError,
  runRemoteStep,
  skip,
  type JobContext,
  type RemoteStep,
  type StepFailureContext,
} from '@listing/outbox';
import { z } from 'zod';
import { AuditService } from '../audit/audit.service';
import { OperationProgress } from '../operations/operation-progress.service';
import { OPERATION_FAILURES } from '../operations/operation.failures';
import { PlatformClient } from '../platform/platform.client';
import { platformExhausted, platformVerdict } from '../platform/platform.failures';
import { StoreAccess } from '../stores/store-access.service';
import { STORE_SYNC_FAILURES } from './store-syncs.failures';
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

type Payload = z.infer<typeof runStoreSyncJob.schema>;
type Page = Awaited<ReturnType<PlatformClient['listProducts']>>;
type Plan = {
  syncId: string;
  storeId: string;
  cursor: string | null;
  access: Awaited<ReturnType<StoreAccess['active']>>;
};
/** The listing's last page (not saved yet: settle saves it and finishes the sync at once). */
type LastPage = { page: Page; cursor: string | null; pages: number };
type Outcome = { outcome: string; pages?: number };

/**
 * Walks the store's product listing page by page. Each page but the last is upserted and
 * checkpointed in a short transaction of its own (the HTTP calls sit between transactions), so a
 * crash or a redelivery resumes from the last committed cursor; the last page finishes the sync
 * atomically in settle().
 */
@Injectable()
export class StoreSyncJob implements RemoteStep<Payload, Plan, LastPage, Outcome> {
  constructor(
    private readonly db: Database,
    private readonly syncs: StoreSyncsRepository,
    private readonly stores: StoreAccess,
    private readonly platform: PlatformClient,
    private readonly operations: OperationProgress,
    private readonly audit: AuditService,
  ) {}

  @OutboxHandler(runStoreSyncJob)
  run(payload: Payload, context: JobContext) {
    return runRemoteStep(this.db, this, payload, context);
  }

  async claim({ syncId, operationId }: Payload, context: JobContext) {
    const sync = await this.syncs.find(syncId);
    if (!sync || sync.status === 'failed') return skip({ outcome: 'skipped' });
    if (sync.status === 'succeeded') {
      await this.operations.succeeded(operationId);
      return skip({ outcome: 'skipped' });
    }
    const access = await this.stores.active(context.workspaceId!, sync.storeId);
    await this.syncs.markRunning(syncId);
    await this.operations.running(operationId);
    return { syncId, storeId: sync.storeId, cursor: sync.cursor, access };
  }

  /** Fetches the pages from the checkpoint on, saving each but the last as it goes. */
  async call(plan: Plan, context: JobContext): Promise<LastPage> {
    let cursor = plan.cursor;
    const seen = new Set<string | null>([cursor]);
    for (let pages = 1; ; pages++) {
      const { storeExternalId, credentials } = plan.access;
      const page = await this.platform.listProducts(storeExternalId, credentials.apiKey, cursor, PAGE_SIZE);
      const next = page.nextCursor;
      if (next === null) return { page, cursor, pages };
      // A marketplace that hands back a cursor it already gave would keep this loop (and the
      // calls) going forever: a verdict, not something a retry fixes.
      if (seen.has(next)) throw new PermanentStepError(STORE_SYNC_FAILURES.SYNC_CURSOR_LOOP);
      seen.add(next);
      await this.db.withWorkspace(context.workspaceId!, () => this.save(plan, page, cursor));
      cursor = next;
    }
  }

  async settle(plan: Plan, last: LastPage, { operationId }: Payload) {
    await this.save(plan, last.page, last.cursor);
    // A full listing ended: what it did not see is no longer on the marketplace.
    const removed = await this.syncs.deleteUnseen(plan.storeId, plan.syncId);
    await this.operations.succeeded(operationId);
    await this.audit.append({
      action: 'STORE_SYNC_SUCCEEDED',
      entityType: 'store_sync',
      entityId: plan.syncId,
      actor: 'system',
      metadata: { storeId: plan.storeId, operationId, removed },
    });
    return { outcome: 'succeeded', pages: last.pages };
  }

  permanent(error: unknown) {
    return platformVerdict(error, STORE_SYNC_FAILURES.SYNC_REJECTED);
  }

  exhausted(error: unknown) {
    return platformExhausted(error);
  }

  async fail({ syncId, operationId }: Payload, { failure }: StepFailureContext<Plan>) {
    await this.syncs.markFailed(syncId, failure.code);
    await this.operations.failed(operationId, failure);
    return { outcome: `failed:${failure.code}` };
  }

  /** The outbox gave up on the job: the sync fails and frees its store's one active slot. */
  @OnOutboxDeadLetter(runStoreSyncJob)
  async abandoned(payload: Payload): Promise<void> {
    await this.syncs.markFailed(payload.syncId, OPERATION_FAILURES.TASK_ABANDONED.code);
    await this.operations.failed(payload.operationId, OPERATION_FAILURES.TASK_ABANDONED);
  }

  /** Upserts one page and moves the checkpoint past it, if no other delivery moved it first. */
  private async save(plan: Plan, page: Page, cursor: string | null): Promise<void> {
    await this.syncs.upsertProducts(plan.storeId, plan.syncId, page.items);
    if (!(await this.syncs.checkpoint(plan.syncId, cursor, page.nextCursor, page.items.length))) {
      throw new CheckpointMovedError('the sync moved under this delivery');
    }
  }
}
