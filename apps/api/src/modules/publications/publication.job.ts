import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  defineJob,
  OnOutboxDeadLetter,
  OutboxHandler,
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
import { PUBLICATION_FAILURES } from './publications.failures';
import { PublicationsRepository } from './publications.repository';

export const publishProductJob = defineJob({
  name: 'publication.publish',
  queue: 'publications',
  schema: z.object({ publicationId: z.uuid(), operationId: z.uuid() }),
  // Re-entrant by the publication's status and the provider key; see the handler. The
  // marketplace call must not sit in a transaction: the remote step opens short ones around it.
  inbox: false,
  transaction: false,
});

/** The marketplace's idempotency key of a publication: one product per publication, ever. */
export const publicationProviderKey = (publicationId: string) => `publication-${publicationId}`;

type Payload = z.infer<typeof publishProductJob.schema>;
type Plan = {
  publicationId: string;
  /** A create may have reached the marketplace before this delivery (status was 'publishing'). */
  sentBefore: boolean;
  access: Awaited<ReturnType<StoreAccess['active']>>;
  content: ProductContent;
};
type Created = Awaited<ReturnType<PlatformClient['createProduct']>>;
type Outcome = { outcome: string; platformProductId?: string };

/**
 * Creates the product at the marketplace. Redelivery-safe in three layers: a published
 * publication is never sent again (conditional status); the provider key derived from the
 * publication id makes a repeated call (after a crash or a dropped response) return the same
 * product; the request body comes from the immutable revision, so the repeat matches the first.
 */
@Injectable()
export class PublicationJob implements RemoteStep<Payload, Plan, Created, Outcome> {
  constructor(
    private readonly db: Database,
    private readonly publications: PublicationsRepository,
    private readonly stores: StoreAccess,
    private readonly content: ProductContentService,
    private readonly platform: PlatformClient,
    private readonly operations: OperationProgress,
    private readonly audit: AuditService,
  ) {}

  @OutboxHandler(publishProductJob)
  publish(payload: Payload, context: JobContext) {
    return runRemoteStep(this.db, this, payload, context);
  }

  async claim({ publicationId, operationId }: Payload, context: JobContext) {
    const publication = await this.publications.find(publicationId);
    if (!publication) return skip({ outcome: 'skipped' });
    if (publication.status === 'failed' || publication.status === 'outcome_unknown') {
      // Decided, or waiting for a retry (which sends its own event): this delivery's operation
      // must still end, or its client polls forever.
      await this.operations.failed(
        operationId,
        publication.status === 'outcome_unknown'
          ? PUBLICATION_FAILURES.PUBLICATION_OUTCOME_UNKNOWN
          : PUBLICATION_FAILURES.PUBLICATION_FAILED,
      );
      return skip({ outcome: 'skipped' });
    }
    if (publication.status === 'published') {
      await this.operations.succeeded(operationId);
      return skip({ outcome: 'skipped' });
    }
    const access = await this.stores.active(context.workspaceId!, publication.storeId);
    const content = await this.content.load(publicationId, publication.draftId, publication.revision);
    await this.operations.running(operationId);
    await this.publications.markPublishing(publicationId);
    const sentBefore = publication.status === 'publishing';
    return { publicationId, sentBefore, access, content };
  }

  /** The images, then the product naming them: a repeated call sends the same body. */
  async call({ publicationId, access, content }: Plan): Promise<Created> {
    return this.platform.createProduct(
      access.storeExternalId,
      access.credentials.apiKey,
      publicationProviderKey(publicationId),
      await this.content.body(access, publicationId, content),
    );
  }

  async settle(_plan: Plan, created: Created, { publicationId, operationId }: Payload) {
    if (await this.publications.markPublished(publicationId, created.productId)) {
      await this.audit.append({
        action: 'PUBLICATION_PUBLISHED',
        entityType: 'publication',
        entityId: publicationId,
        actor: 'system',
        metadata: { platformProductId: created.productId, operationId },
      });
    }
    await this.operations.succeeded(operationId);
    return { outcome: 'published', platformProductId: created.productId };
  }

  permanent(error: unknown) {
    return platformVerdict(error, PUBLICATION_FAILURES.PUBLICATION_REJECTED);
  }

  exhausted(error: unknown) {
    return platformExhausted(error);
  }

  /**
   * A refusal of a first-ever create is a verdict: no product exists under this provider key.
   * Anything else after a create may have been sent is not (after an earlier send, even a 4xx says
   * nothing about that one): the product may exist, so the publication keeps its slot (a new
   * publication could create a second product) and waits for a retry.
   */
  async fail({ publicationId, operationId }: Payload, { failure, plan, error }: StepFailureContext<Plan>) {
    const mayExist = plan
      ? plan.sentBefore || !(error instanceof PlatformRejectedError)
      : (await this.publications.find(publicationId))?.status === 'publishing';
    if (mayExist) {
      await this.publications.markOutcomeUnknown(publicationId, failure.code);
      await this.operations.failed(operationId, PUBLICATION_FAILURES.PUBLICATION_OUTCOME_UNKNOWN);
      return { outcome: `outcome_unknown:${failure.code}` };
    }
    await this.publications.markFailed(publicationId, failure.code);
    await this.operations.failed(operationId, failure);
    return { outcome: `failed:${failure.code}` };
  }

  /**
   * The outbox gave up on the job. A publication already 'publishing' may have reached the
   * marketplace: outcome_unknown (keeps its slot; the client retries it). One still 'pending' never
   * sent anything: failed. Only while this event's operation is still open (locked first, in the
   * order a delivery locks them): an old event must not undo what a retry reopened. The
   * publication moves in one statement, so a delivery committing 'publishing' meanwhile is seen.
   */
  @OnOutboxDeadLetter(publishProductJob)
  async abandoned(payload: Payload): Promise<void> {
    if (!(await this.operations.lockOpen(payload.operationId))) return;
    const abandoned = OPERATION_FAILURES.TASK_ABANDONED;
    const settled = await this.publications.settleAbandoned(payload.publicationId, abandoned.code);
    await this.operations.failed(
      payload.operationId,
      settled === 'outcome_unknown' ? PUBLICATION_FAILURES.PUBLICATION_OUTCOME_UNKNOWN : abandoned,
    );
  }
}
