import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import {
  IdempotencyService,
  type IdempotencyResultPolicy,
  type IdempotentOutcome,
  type IdempotentRequestContext,
} from '@listing/idempotency';
import { ResourceNotFoundError } from '../../common/domain-errors';
import { StoreNotActiveError } from '../stores/stores.errors';
import { AlreadyPublishedError, PublicationNotRetryableError } from './publications.errors';
import { decodeCursor, toPage } from '../../common/page-cursor';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { AsyncCommands } from '../operations/async-commands.service';
import { PRODUCT_DRAFT_MODULE } from '../product-drafts/product-drafts.service';
import { RecordKernelService } from '../records/record-kernel.service';
import type { PageQuery } from '../../common/page-query';
import { StoreAccess } from '../stores/store-access.service';
import type { CreatePublicationInput } from './publication.dto';
import { publishProductJob } from './publication.job';
import type { PublicationAccepted, PublicationView } from './publication-view';
import { PublicationsRepository } from './publications.repository';

/**
 * First publish of a product-draft revision to a store: publication row + operation + event in
 * the idempotency engine's transaction. The database's partial unique index decides "once per
 * (store, draft)", also between concurrent requests with different keys.
 */
@Injectable()
export class PublicationsService {
  private readonly policy: IdempotencyResultPolicy<PublicationAccepted>;
  /** The 202 body as first answered (for the first answer and every replay). */
  private readonly accepted = (publicationId: string, operationId: string): Promise<PublicationAccepted> =>
    this.commands.accepted('publication', publicationId, operationId, (id) =>
      this.publications.findAsAccepted(id),
    );

  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    private readonly publications: PublicationsRepository,
    private readonly stores: StoreAccess,
    private readonly records: RecordKernelService,
    private readonly commands: AsyncCommands,
  ) {
    this.policy = commands.acceptedPolicy('publication-accepted-reference-v1', 'publication', this.accepted);
  }

  create(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    input: CreatePublicationInput,
  ): Promise<IdempotentOutcome<PublicationAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: this.policy,
      status: 202,
      prepare: async () => {
        const store = await this.stores.findState(input.storeId);
        if (!store) throw new ResourceNotFoundError('store');
        if (store.status !== 'active') throw new StoreNotActiveError(store.status);
        if (!(await this.records.findRevision(PRODUCT_DRAFT_MODULE, input.draftId, input.revision))) {
          throw new ResourceNotFoundError('product draft revision');
        }
        return input;
      },
      work: async (body) => {
        const id = randomUUID();
        if (!(await this.publications.insert({ id, ...body, createdBy: auth.userId }))) {
          throw new AlreadyPublishedError(await this.publications.findActiveFor(body.storeId, body.draftId));
        }
        return this.enqueuePublish(auth, id, {
          action: 'PUBLICATION_REQUESTED',
          revision: body.revision,
          metadata: { draftId: body.draftId, storeId: body.storeId },
        });
      },
    });
  }

  /**
   * Sends the create of a publication whose outcome is unknown again, under the same provider
   * key: the marketplace returns the product if the lost attempt made it, or makes it now. Never
   * a second product. New operation, same publication.
   */
  retry(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    publicationId: string,
  ): Promise<IdempotentOutcome<PublicationAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: this.policy,
      status: 202,
      prepare: async () => {
        const publication = await this.publications.find(publicationId);
        if (!publication) throw new ResourceNotFoundError('publication');
        if (publication.status !== 'outcome_unknown')
          throw new PublicationNotRetryableError(publication.status);
        const store = await this.stores.findState(publication.storeId);
        if (!store) throw new ResourceNotFoundError('store');
        if (store.status !== 'active') throw new StoreNotActiveError(store.status);
        return publication;
      },
      work: async (publication) => {
        if (!(await this.publications.reopenUnknown(publication.id))) {
          const now = await this.publications.find(publication.id);
          throw new PublicationNotRetryableError(now?.status ?? 'unknown'); // a concurrent retry won
        }
        return this.enqueuePublish(auth, publication.id, {
          action: 'PUBLICATION_RETRY_REQUESTED',
          revision: publication.revision,
          metadata: { draftId: publication.draftId, storeId: publication.storeId },
        });
      },
    });
  }

  /** Operation + outbox event (+ audit) for one delivery of a publication's create. */
  private async enqueuePublish(
    auth: WorkspaceAuthContext,
    id: string,
    audit: { action: string; revision: number; metadata: Record<string, unknown> },
  ): Promise<PublicationAccepted> {
    const operationId = await this.commands.accept({
      kind: 'publication.publish',
      resourceType: 'publication',
      resourceId: id,
      actorUserId: auth.userId,
      job: publishProductJob,
      payload: (operationId) => ({ publicationId: id, operationId }),
      audit: (operationId) => ({
        action: audit.action,
        entityType: 'publication',
        entityId: id,
        revision: audit.revision,
        metadata: { ...audit.metadata, operationId },
      }),
    });
    return this.accepted(id, operationId);
  }

  get(auth: WorkspaceAuthContext, id: string): Promise<PublicationView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const view = await this.publications.find(id);
      if (!view) throw new ResourceNotFoundError('publication');
      return view;
    });
  }

  list(auth: WorkspaceAuthContext, query: PageQuery) {
    const after = decodeCursor(query.cursor);
    return this.db.withWorkspace(auth.workspaceId, async () =>
      toPage(await this.publications.list(query.limit + 1, after), query.limit),
    );
  }
}
