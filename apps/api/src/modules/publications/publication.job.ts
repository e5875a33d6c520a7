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
import { MediaUsage, type ReadyImage } from '../media/media-usage.service';
import { OperationProgress } from '../operations/operation-progress.service';
import { OPERATION_FAILURES } from '../operations/operation.failures';
import { PlatformClient, PlatformRejectedError } from '../platform/platform.client';
import { platformExhausted, platformVerdict } from '../platform/platform.failures';
import { PRODUCT_DRAFT_MODULE } from '../product-drafts/product-drafts.service';
import { RecordKernelService } from '../records/record-kernel.service';
import { StoreAccess } from '../stores/store-access.service';
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

/** The marketplace's idempotency key of one image of a publication: uploaded once per product. */
export const publicationImageKey = (publicationId: string, mediaId: string) =>
  `publication-${publicationId}-image-${mediaId}`;

type Payload = z.infer<typeof publishProductJob.schema>;
type Plan = {
  publicationId: string;
  /** A create may have reached the marketplace before this delivery (status was 'publishing'). */
  sentBefore: boolean;
  access: Awaited<ReturnType<StoreAccess['active']>>;
  product: Record<string, unknown>;
  /** The revision's ready images, uploaded (once each) before the product names them. */
  images: ReadyImage[];
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
    private readonly records: RecordKernelService,
    private readonly platform: PlatformClient,
    private readonly media: MediaUsage,
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
    const revision = await this.records.findRevision(
      PRODUCT_DRAFT_MODULE,
      publication.draftId,
      publication.revision,
    );
    if (!revision) throw new Error('publication revision missing');
    await this.operations.running(operationId);
    await this.publications.markPublishing(publicationId);
    const sentBefore = publication.status === 'publishing';
    const imageIds = Array.isArray(revision.data.imageIds) ? (revision.data.imageIds as string[]) : [];
    const images = await this.media.readyImages(imageIds);
    return { publicationId, sentBefore, access, product: productBody(publicationId, revision.data), images };
  }

  /**
   * Each image first (its own provider key: a repeat answers the same image id), then the
   * product naming them in the revision's order: a repeated call sends the same body.
   */
  async call({ publicationId, access, product, images }: Plan): Promise<Created> {
    const imageIds: string[] = [];
    for (const image of images) {
      const bytes = await this.media.bytesOf(image);
      if (!bytes) throw new Error(`the stored bytes of media ${image.mediaId} are missing or changed`);
      const uploaded = await this.platform.uploadImage(
        access.storeExternalId,
        access.credentials.apiKey,
        publicationImageKey(publicationId, image.mediaId),
        { contentType: image.contentType, bytes },
      );
      imageIds.push(uploaded.imageId);
    }
    return this.platform.createProduct(
      access.storeExternalId,
      access.credentials.apiKey,
      publicationProviderKey(publicationId),
      // Without images the body is what it was before images were sent: a retry of a create
      // made by an older version still matches its provider key's first body.
      imageIds.length ? { ...product, images: imageIds } : product,
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
  if (data.attributes && typeof data.attributes === 'object') body.attributes = data.attributes;
  return body;
}
