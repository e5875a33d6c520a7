import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  defineJob,
  OnOutboxDeadLetter,
  OutboxHandler,
  OutboxWriter,
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
import { PlatformClient, PlatformRejectedError } from '../platform/platform.client';
import { platformExhausted, platformVerdict } from '../platform/platform.failures';
import { StoreAccess } from '../stores/store-access.service';
import { ProductContentService, type ProductContent } from './product-content.service';
import { PublicationUpdatesRepository, type PublicationUpdateRow } from './publication-updates.repository';
import { PUBLICATION_FAILURES } from './publications.failures';
import { PublicationsRepository } from './publications.repository';

export const updateProductJob = defineJob({
  name: 'publication.update',
  queue: 'publications',
  schema: z.object({ updateId: z.uuid(), operationId: z.uuid() }),
  // Re-entrant by the update's status, the product's send slot and the provider key; the
  // marketplace call must not sit in a transaction: the remote step opens short ones around it.
  inbox: false,
  transaction: false,
});

/** The marketplace's idempotency key of one revision pushed to a product: applied once, ever. */
export const publicationRevisionKey = (publicationId: string, revision: number) =>
  `publication-${publicationId}-revision-${revision}`;

type Payload = z.infer<typeof updateProductJob.schema>;
type Plan = {
  update: PublicationUpdateRow;
  productId: string;
  /** This update held the slot before this delivery: it may have reached the marketplace. */
  sentBefore: boolean;
  access: Awaited<ReturnType<StoreAccess['active']>>;
  content: ProductContent;
};
type Updated = Awaited<ReturnType<PlatformClient['updateProduct']>>;
type Outcome = { outcome: string; revision?: number };

/**
 * Pushes a newer draft revision to a live product, in revision order per product. The order is
 * the database's: under the publication's row lock an update takes the product's one send slot
 * only when it is newer than the live revision and than every other update requested; an older
 * one found then is superseded (never sent), and one arriving while an older update is in flight
 * waits: whoever frees the slot hands it to the newest waiting update (settleWaiting). So a late
 * or redelivered older update never reaches the marketplace after a newer one, and the live
 * revision only moves forward (sql/025's trigger).
 */
@Injectable()
export class PublicationUpdateJob implements RemoteStep<Payload, Plan, Updated, Outcome> {
  constructor(
    private readonly db: Database,
    private readonly publications: PublicationsRepository,
    private readonly updates: PublicationUpdatesRepository,
    private readonly stores: StoreAccess,
    private readonly content: ProductContentService,
    private readonly platform: PlatformClient,
    private readonly operations: OperationProgress,
    private readonly outbox: OutboxWriter,
    private readonly audit: AuditService,
  ) {}

  @OutboxHandler(updateProductJob)
  update(payload: Payload, context: JobContext) {
    return runRemoteStep(this.db, this, payload, context);
  }

  async claim({ updateId, operationId }: Payload, context: JobContext) {
    // Locks in one order everywhere: the publication, then its update, then the operation.
    const live = await this.lockPublicationOf(updateId);
    const update = live && (await this.updates.findRow(updateId, { lock: true }));
    const open = update?.status === 'pending' || update?.status === 'sending';
    if (!live || !update || update.operation_id !== operationId || !open) return skip({ outcome: 'skipped' });
    if (live.status !== 'published' || live.live_revision === null) {
      throw new Error('an update of a publication that is not live'); // the request checked it
    }
    const holds = live.sending_revision === update.revision;
    if (!holds) {
      const newest = Math.max(live.live_revision, live.newest_requested ?? 0);
      if (update.revision < newest || update.revision <= live.live_revision) {
        await this.updates.markSuperseded(updateId);
        await this.operations.failed(operationId, PUBLICATION_FAILURES.PUBLICATION_UPDATE_SUPERSEDED);
        return skip({ outcome: 'superseded', revision: update.revision });
      }
      // An older update is in flight: this one waits; that one's end hands the slot over.
      if (live.sending_revision !== null) return skip({ outcome: 'waiting', revision: update.revision });
      if (!(await this.publications.takeSendingSlot(update.publication_id, update.revision))) {
        throw new Error('the send slot changed under the publication lock');
      }
    }
    const access = await this.stores.active(context.workspaceId!, live.store_id);
    const content = await this.content.load(update.publication_id, update.draft_id, update.revision);
    await this.operations.running(operationId);
    await this.updates.markSending(updateId);
    return { update, productId: live.platform_product_id!, sentBefore: holds, access, content };
  }

  async call({ update, productId, access, content }: Plan): Promise<Updated> {
    return this.platform.updateProduct(
      access.storeExternalId,
      access.credentials.apiKey,
      productId,
      publicationRevisionKey(update.publication_id, update.revision),
      await this.content.body(access, update.publication_id, content),
    );
  }

  async settle({ update }: Plan, _updated: Updated, { operationId }: Payload): Promise<Outcome> {
    if (await this.publications.advanceLive(update.publication_id, update.revision)) {
      await this.updates.markApplied(update.id);
      await this.audit.append({
        action: 'PUBLICATION_UPDATED',
        entityType: 'publication',
        entityId: update.publication_id,
        revision: update.revision,
        actor: 'system',
        metadata: { updateId: update.id, operationId },
      });
      await this.handOff(update.publication_id, update.revision);
    }
    await this.operations.succeeded(operationId);
    return { outcome: 'applied', revision: update.revision };
  }

  permanent(error: unknown) {
    return platformVerdict(error, PUBLICATION_FAILURES.PUBLICATION_REJECTED);
  }

  exhausted(error: unknown) {
    return platformExhausted(error);
  }

  /**
   * A refusal of an update never sent before is a verdict: the product is unchanged. Anything
   * else may have been applied: outcome_unknown. Either way the slot is freed for the next one
   * (a newer update overwrites whatever this one did).
   */
  async fail({ updateId, operationId }: Payload, { failure, plan, error }: StepFailureContext<Plan>) {
    const live = await this.lockPublicationOf(updateId);
    const update = live && (await this.updates.findRow(updateId, { lock: true }));
    if (!live || !update) return { outcome: 'skipped' };
    const mayHaveApplied = plan
      ? plan.sentBefore || !(error instanceof PlatformRejectedError)
      : update.status === 'sending';
    const unknown = mayHaveApplied && (await this.updates.markOutcomeUnknown(updateId, failure.code));
    if (!unknown) await this.updates.markFailed(updateId, failure.code);
    await this.operations.failed(
      operationId,
      unknown ? PUBLICATION_FAILURES.PUBLICATION_UPDATE_OUTCOME_UNKNOWN : failure,
    );
    await this.freeSlot(update, live.live_revision ?? 0);
    return { outcome: `${unknown ? 'outcome_unknown' : 'failed'}:${failure.code}` };
  }

  /** The outbox gave up on the job: the update ends, and the slot goes on if it held it. */
  @OnOutboxDeadLetter(updateProductJob)
  async abandoned(payload: Payload): Promise<void> {
    const live = await this.lockPublicationOf(payload.updateId);
    const update = live && (await this.updates.findRow(payload.updateId, { lock: true }));
    if (!live || !update || !(await this.operations.lockOpen(payload.operationId))) return;
    const settled = await this.updates.settleAbandoned(
      payload.updateId,
      OPERATION_FAILURES.TASK_ABANDONED.code,
    );
    await this.operations.failed(
      payload.operationId,
      settled === 'outcome_unknown'
        ? PUBLICATION_FAILURES.PUBLICATION_UPDATE_OUTCOME_UNKNOWN
        : OPERATION_FAILURES.TASK_ABANDONED,
    );
    await this.freeSlot(update, live.live_revision ?? 0);
  }

  /** The publication of an update, locked: the lock every decision on its updates is made under. */
  private async lockPublicationOf(updateId: string) {
    const peek = await this.updates.findRow(updateId);
    return peek && this.publications.lockLive(peek.publication_id);
  }

  /** Frees the product's slot if this update held it, and hands it on (live is unchanged). */
  private async freeSlot(update: PublicationUpdateRow, liveRevision: number): Promise<void> {
    if (await this.publications.releaseSendingSlot(update.publication_id, update.revision)) {
      await this.handOff(update.publication_id, liveRevision);
    }
  }

  /**
   * The slot is free (in this transaction, under the publication's lock, taken by the caller):
   * waiting updates that are no longer the newest end as superseded; the newest waiting one gets
   * an event of its own.
   */
  private async handOff(publicationId: string, liveRevision: number): Promise<void> {
    const { superseded, next } = await this.updates.settleWaiting(publicationId, liveRevision);
    for (const operationId of superseded) {
      await this.operations.failed(operationId, PUBLICATION_FAILURES.PUBLICATION_UPDATE_SUPERSEDED);
    }
    if (next)
      await this.outbox.appendJob(updateProductJob, { updateId: next.id, operationId: next.operationId });
  }
}
