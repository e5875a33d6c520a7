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
import { keysetPage } from '../../common/page-cursor';
import type { PageQuery } from '../../common/page-query';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { AsyncCommands } from '../operations/async-commands.service';
import { PRODUCT_DRAFT_MODULE } from '../product-drafts/product-drafts.service';
import { RecordKernelService } from '../records/record-kernel.service';
import { StoreNotActiveError } from '../stores/stores.errors';
import { StoreAccess } from '../stores/store-access.service';
import type { CreatePublicationUpdateInput } from './publication.dto';
import { updateProductJob } from './publication-update.job';
import type { PublicationUpdateAccepted, PublicationUpdateView } from './publication-update-view';
import { PublicationUpdatesRepository } from './publication-updates.repository';
import { PublicationNotLiveError, RevisionNotNewerError } from './publications.errors';
import { PublicationsRepository } from './publications.repository';

/**
 * Pushing a newer revision of a draft to its live product: update row + operation + event in the
 * idempotency engine's transaction (202 { update, operation }). The request refuses what cannot
 * go forward (an older or the same revision); the worker keeps the order between concurrent ones.
 */
@Injectable()
export class PublicationUpdatesService {
  private readonly policy: IdempotencyResultPolicy<PublicationUpdateAccepted>;
  private readonly accepted = (updateId: string, operationId: string): Promise<PublicationUpdateAccepted> =>
    this.commands.accepted('update', updateId, operationId, (id) => this.updates.findAsAccepted(id));

  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    private readonly publications: PublicationsRepository,
    private readonly updates: PublicationUpdatesRepository,
    private readonly stores: StoreAccess,
    private readonly records: RecordKernelService,
    private readonly commands: AsyncCommands,
  ) {
    this.policy = commands.acceptedPolicy(
      'publication-update-accepted-reference-v1',
      'update',
      this.accepted,
    );
  }

  create(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    publicationId: string,
    input: CreatePublicationUpdateInput,
  ): Promise<IdempotentOutcome<PublicationUpdateAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: this.policy,
      status: 202,
      prepare: async () => {
        const publication = await this.publications.find(publicationId);
        if (!publication) throw new ResourceNotFoundError('publication');
        if (publication.status !== 'published') throw new PublicationNotLiveError(publication.status);
        const store = await this.stores.findState(publication.storeId);
        if (!store) throw new ResourceNotFoundError('store');
        if (store.status !== 'active') throw new StoreNotActiveError(store.status);
        if (!(await this.records.findRevision(PRODUCT_DRAFT_MODULE, publication.draftId, input.revision))) {
          throw new ResourceNotFoundError('product draft revision');
        }
        return publication;
      },
      work: async (publication) => {
        const live = await this.publications.lockLive(publication.id);
        const newest = Math.max(live?.live_revision ?? 0, live?.newest_requested ?? 0);
        if (input.revision <= newest) throw new RevisionNotNewerError(input.revision, newest);
        const id = randomUUID();
        const operationId = randomUUID();
        const inserted = await this.updates.insert({
          id,
          publicationId: publication.id,
          draftId: publication.draftId,
          revision: input.revision,
          operationId,
          createdBy: auth.userId,
        });
        if (!inserted) throw new RevisionNotNewerError(input.revision, input.revision);
        await this.commands.accept({
          operationId,
          kind: 'publication.update',
          resourceType: 'publication-update',
          resourceId: id,
          actorUserId: auth.userId,
          job: updateProductJob,
          payload: () => ({ updateId: id, operationId }),
          audit: () => ({
            action: 'PUBLICATION_UPDATE_REQUESTED',
            entityType: 'publication',
            entityId: publication.id,
            revision: input.revision,
            metadata: { updateId: id, operationId },
          }),
        });
        return this.accepted(id, operationId);
      },
    });
  }

  get(auth: WorkspaceAuthContext, publicationId: string, id: string): Promise<PublicationUpdateView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const view = await this.updates.find(publicationId, id);
      if (!view) throw new ResourceNotFoundError('publication update');
      return view;
    });
  }

  list(auth: WorkspaceAuthContext, publicationId: string, query: PageQuery) {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      if (!(await this.publications.find(publicationId))) throw new ResourceNotFoundError('publication');
      return keysetPage(query.limit, query.cursor, (n, after) => this.updates.list(publicationId, n, after));
    });
  }
}
