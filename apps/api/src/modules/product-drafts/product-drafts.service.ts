import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  IdempotencyService,
  type IdempotentOutcome,
  type IdempotentRequestContext,
} from '@listing/idempotency';
import { ResourceNotFoundError, ValidationFailedError } from '../../common/domain-errors';
import { UnknownFeatureError } from './product-drafts.errors';
import { decodeRevisionCursor, encodeRevisionCursor, keysetPage, toPageBy } from '../../common/page-cursor';
import type { PageQuery } from '../../common/page-query';
import type { RevisionCondition } from '../../common/http-params';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { MediaUsage } from '../media/media-usage.service';
import { RecordKernelService } from '../records/record-kernel.service';
import {
  asDraft,
  asDraftExecution,
  type ProductDraftFeatureResult,
  type ProductDraftView,
} from './product-draft-view';
import { draftDataSchema, type DraftData, type DraftPatch } from './product-draft.dto';
import { PRODUCT_DRAFT_FEATURES } from './product-draft.features';

export const PRODUCT_DRAFT_MODULE = 'product_draft';

/**
 * Product drafts on the records kernel. Writes go through runPrepared: with an
 * Idempotency-Key the same request runs once and replays the first result; without one they
 * simply run in a transaction.
 */
@Injectable()
export class ProductDraftsService {
  constructor(
    private readonly db: Database,
    private readonly kernel: RecordKernelService,
    private readonly idempotency: IdempotencyService,
    private readonly media: MediaUsage,
  ) {}

  create(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    data: DraftData,
  ): Promise<IdempotentOutcome<ProductDraftView>> {
    return draftOutcome(
      asDraft,
      this.idempotency.runPrepared({
        owner: auth,
        ...idem, // key, operation, fingerprint, keyError
        policy: this.kernel.snapshotPolicy(PRODUCT_DRAFT_MODULE),
        status: 201,
        prepare: async () => {
          await this.assertImages(data.imageIds);
          return data;
        },
        work: (payload) => this.kernel.create(auth, PRODUCT_DRAFT_MODULE, payload),
      }),
    );
  }

  update(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    id: string,
    expectedRevision: RevisionCondition,
    patch: DraftPatch,
  ): Promise<IdempotentOutcome<ProductDraftView>> {
    return draftOutcome(
      asDraft,
      this.idempotency.runPrepared({
        owner: auth,
        ...idem, // key, operation, fingerprint, keyError
        policy: this.kernel.snapshotPolicy(PRODUCT_DRAFT_MODULE),
        status: 200,
        prepare: async () => {
          await this.assertImages(patch.imageIds);
          return patch;
        },
        work: (change) =>
          this.kernel.update(auth, PRODUCT_DRAFT_MODULE, id, expectedRevision, (current) =>
            mergeDraft(current, change),
          ),
      }),
    );
  }

  executeFeature(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    id: string,
    featureId: string,
    expectedRevision: RevisionCondition | null,
  ): Promise<IdempotentOutcome<ProductDraftFeatureResult>> {
    return draftOutcome(
      asDraftExecution,
      this.idempotency.runPrepared({
        owner: auth,
        ...idem, // key, operation, fingerprint, keyError
        policy: this.kernel.executionPolicy(PRODUCT_DRAFT_MODULE),
        status: 201,
        prepare: async () => {
          // Own keys only: `constructor` or `__proto__` must be unknown features, not Object's.
          const feature = Object.hasOwn(PRODUCT_DRAFT_FEATURES, featureId)
            ? PRODUCT_DRAFT_FEATURES[featureId]
            : undefined;
          if (!feature) throw new UnknownFeatureError(Object.keys(PRODUCT_DRAFT_FEATURES));
          return feature;
        },
        work: (feature) =>
          this.kernel.executeFeature(auth, PRODUCT_DRAFT_MODULE, id, feature, expectedRevision),
      }),
    );
  }

  /** A draft names media of its own workspace only, and none that failed (422 otherwise). */
  private async assertImages(imageIds: readonly string[] | undefined): Promise<void> {
    const unusable = new Set(await this.media.unusable(imageIds ?? []));
    if (unusable.size === 0) return;
    throw new ValidationFailedError(
      imageIds!.flatMap((id, i) =>
        unusable.has(id)
          ? [{ path: `imageIds.${i}`, message: 'no usable media with this id in the workspace' }]
          : [],
      ),
    );
  }

  get(auth: WorkspaceAuthContext, id: string): Promise<ProductDraftView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const view = await this.kernel.findCurrent(PRODUCT_DRAFT_MODULE, id);
      if (!view) throw new ResourceNotFoundError('product draft');
      return asDraft(view);
    });
  }

  getRevision(auth: WorkspaceAuthContext, id: string, revision: number): Promise<ProductDraftView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const view = await this.kernel.findRevision(PRODUCT_DRAFT_MODULE, id, revision);
      if (!view) throw new ResourceNotFoundError('revision');
      return asDraft(view);
    });
  }

  /** A draft's revisions newest first (each as GET …/revisions/{n} answers it). */
  listRevisions(
    auth: WorkspaceAuthContext,
    id: string,
    query: PageQuery,
  ): Promise<{ items: ProductDraftView[]; nextCursor: string | null }> {
    const before = decodeRevisionCursor(query.cursor);
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const rows = await this.kernel.listRevisions(PRODUCT_DRAFT_MODULE, id, query.limit + 1, before);
      // Every draft has revision 1: none at all is no draft (or a cursor past its first revision).
      if (!rows.length && !(await this.kernel.findCurrent(PRODUCT_DRAFT_MODULE, id))) {
        throw new ResourceNotFoundError('product draft');
      }
      return toPageBy(rows.map(asDraft), query.limit, (last) => encodeRevisionCursor(last.revision));
    });
  }

  list(auth: WorkspaceAuthContext, limit: number, cursor?: string) {
    return this.db.withWorkspace(auth.workspaceId, () =>
      keysetPage(limit, cursor, async (n, after) =>
        (await this.kernel.listCurrent(PRODUCT_DRAFT_MODULE, n, after)).map(asDraft),
      ),
    );
  }
}

async function draftOutcome<T, R>(
  as: (view: T) => R,
  outcome: Promise<IdempotentOutcome<T>>,
): Promise<IdempotentOutcome<R>> {
  const { result, ...rest } = await outcome;
  return { ...rest, result: as(result) };
}

/** Applies a patch and validates the whole result (a 422 rolls everything back). */
function mergeDraft(current: Record<string, unknown>, patch: DraftPatch): Record<string, unknown> {
  const merged = draftDataSchema.safeParse({ ...current, ...patch });
  if (!merged.success) {
    throw new ValidationFailedError(
      merged.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    );
  }
  return merged.data;
}
