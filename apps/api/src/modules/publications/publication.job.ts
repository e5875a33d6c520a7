import type { Database } from '@listing/db';
import { defineJob, OnOutboxDeadLetter, OutboxHandler, type JobContext } from '@listing/outbox';
import { z } from 'zod';
import { AuditRepository } from '../audit/audit.repository';
import { OperationsRepository } from '../operations/operations.repository';
import { ABANDONED, permanentFailure, type SafeError } from '../platform/job-failures';
import { PlatformRejectedError, type PlatformClient } from '../platform/platform.client';
import { PRODUCT_DRAFT_MODULE } from '../product-drafts/product-drafts.service';
import { RecordsRepository } from '../records/records.repository';
import type { CredentialCipher } from '../stores/credential-cipher';
import { activeStoreAccess } from '../stores/store-access';
import { StoresRepository } from '../stores/stores.repository';
import { PublicationsRepository } from './publications.repository';

export const publishProductJob = defineJob({
  name: 'publication.publish',
  queue: 'publications',
  schema: z.object({ publicationId: z.uuid(), operationId: z.uuid() }),
  // Re-entrant by the publication's status and the provider key; see the handler. The
  // marketplace call must not sit in a transaction: the handler opens short ones around it.
  inbox: false,
  transaction: false,
});

const ALREADY_FAILED: SafeError = {
  code: 'PUBLICATION_FAILED',
  message: 'the publication had already failed; publish the draft again',
};
const OUTCOME_UNKNOWN: SafeError = {
  code: 'PUBLICATION_OUTCOME_UNKNOWN',
  message:
    'the marketplace did not confirm the product and may have created it; retry this publication (it cannot create a second product)',
};

/** The marketplace's idempotency key of a publication: one product per publication, ever. */
export const publicationProviderKey = (publicationId: string) => `publication-${publicationId}`;

/**
 * Creates the product at the marketplace. Redelivery-safe in three layers: a published
 * publication is never sent again (conditional status); the provider key derived from the
 * publication id makes a repeated call (after a crash or a dropped response) return the same
 * product; the request body comes from the immutable revision, so the repeat matches the first.
 */
export class PublicationHandlers {
  private readonly publications: PublicationsRepository;
  private readonly stores: StoresRepository;
  private readonly records: RecordsRepository;
  private readonly operations: OperationsRepository;
  private readonly audit: AuditRepository;

  constructor(
    private readonly db: Database,
    private readonly cipher: CredentialCipher,
    private readonly platform: PlatformClient,
  ) {
    this.publications = new PublicationsRepository(db);
    this.stores = new StoresRepository(db);
    this.records = new RecordsRepository(db);
    this.operations = new OperationsRepository(db);
    this.audit = new AuditRepository(db);
  }

  @OutboxHandler(publishProductJob)
  async publish(payload: { publicationId: string; operationId: string }, context: JobContext) {
    const workspaceId = context.workspaceId!;
    const { publicationId, operationId } = payload;
    // Whether a create for this publication may have reached the marketplace: before this
    // delivery (an earlier one, or the attempt before a retry, got as far as 'publishing'), or by
    // it. Only a refusal of a first-ever create proves no product exists: after an earlier send,
    // a 4xx (the merchant rotated the key, a 409 on the key) says nothing about that one.
    let sentBefore = false;
    let sentNow = false;
    try {
      const plan = await this.db.withWorkspace(workspaceId, async () => {
        const publication = await this.publications.find(publicationId);
        if (!publication) return null;
        if (publication.status === 'failed' || publication.status === 'outcome_unknown') {
          // Decided, or waiting for a retry (which sends its own event): this delivery's operation
          // must still end, or its client polls forever.
          await this.operations.markFailed(
            operationId,
            publication.status === 'outcome_unknown' ? OUTCOME_UNKNOWN : ALREADY_FAILED,
          );
          return null;
        }
        sentBefore = publication.status === 'publishing';
        if (publication.status === 'published') {
          await this.operations.markSucceeded(operationId);
          return null;
        }
        const access = await activeStoreAccess(this.stores, this.cipher, workspaceId, publication.storeId);
        const revision = await this.records.findRevision(
          PRODUCT_DRAFT_MODULE,
          publication.draftId,
          publication.revision,
        );
        if (!revision) throw new Error('publication revision missing');
        await this.operations.markRunning(operationId);
        await this.publications.markPublishing(publicationId);
        return { access, product: productBody(publicationId, revision.data) };
      });
      if (!plan) return { outcome: 'skipped' };

      sentNow = true;
      const created = await this.platform.createProduct(
        plan.access.storeExternalId,
        plan.access.credentials.apiKey,
        publicationProviderKey(publicationId),
        plan.product,
      );

      return await this.db.withWorkspace(workspaceId, async () => {
        if (await this.publications.markPublished(publicationId, created.productId)) {
          await this.audit.append({
            action: 'PUBLICATION_PUBLISHED',
            entityType: 'publication',
            entityId: publicationId,
            actor: 'system',
            metadata: { platformProductId: created.productId, operationId },
          });
        }
        await this.operations.markSucceeded(operationId);
        return { outcome: 'published', platformProductId: created.productId };
      });
    } catch (error) {
      const failure = permanentFailure(error, context, {
        code: 'PUBLICATION_REJECTED',
        message: 'the marketplace refused the product',
      });
      if (!failure) throw error;
      // A refusal of the create is a verdict: no product exists under this provider key. Anything
      // else after a create may have been sent is not: the product may exist, so the publication
      // keeps its slot (a new publication could create a second product) and waits for a retry.
      if (sentBefore || (sentNow && !(error instanceof PlatformRejectedError))) {
        await this.db.withWorkspace(workspaceId, async () => {
          await this.publications.markOutcomeUnknown(publicationId, failure.code);
          await this.operations.markFailed(operationId, OUTCOME_UNKNOWN);
        });
        return { outcome: `outcome_unknown:${failure.code}` };
      }
      await this.db.withWorkspace(workspaceId, async () => {
        await this.publications.markFailed(publicationId, failure.code);
        await this.operations.markFailed(operationId, failure);
      });
      return { outcome: `failed:${failure.code}` };
    }
  }
  /**
   * The outbox gave up on the job. A publication already 'publishing' may have reached the
   * marketplace: outcome_unknown (keeps its slot; the client retries it). One still 'pending' never
   * sent anything: failed. Only while this event's operation is still open (locked first, in the
   * order a delivery locks them): an old event must not undo what a retry reopened. The
   * publication moves in one statement, so a delivery committing 'publishing' meanwhile is seen.
   */
  @OnOutboxDeadLetter(publishProductJob)
  async abandoned(payload: { publicationId: string; operationId: string }): Promise<void> {
    if (!(await this.operations.lockOpen(payload.operationId))) return;
    const settled = await this.publications.settleAbandoned(payload.publicationId, ABANDONED.code);
    await this.operations.markFailed(
      payload.operationId,
      settled === 'outcome_unknown' ? OUTCOME_UNKNOWN : ABANDONED,
    );
  }
}

/** The marketplace body, a pure function of the immutable revision (a retry sends the same). */
function productBody(publicationId: string, data: Record<string, unknown>): Record<string, unknown> {
  const price = data.price as { amount?: string; currency?: string } | undefined;
  const body: Record<string, unknown> = {
    title: data.title,
    price: price?.amount ?? null,
    externalRef: publicationId,
  };
  if (price?.currency) body.currency = price.currency;
  for (const field of ['description', 'sku', 'categoryId'] as const) {
    if (typeof data[field] === 'string') body[field] = data[field];
  }
  return body;
}
