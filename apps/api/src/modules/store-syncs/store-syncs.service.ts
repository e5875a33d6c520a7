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
import { SyncAlreadyActiveError } from './store-syncs.errors';
import { decodeCursor, decodeKeyCursor, encodeKeyCursor, toPage } from '../../common/page-cursor';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { AsyncCommands } from '../operations/async-commands.service';
import type { PageQuery } from '../../common/page-query';
import { StoreAccess } from '../stores/store-access.service';
import type { CreateStoreSyncInput } from './store-sync.dto';
import { runStoreSyncJob } from './store-sync.job';
import type { StoreProductView, StoreSyncAccepted, StoreSyncView } from './store-sync-view';
import { StoreSyncsRepository } from './store-syncs.repository';

/** Full syncs of a store's online products; one active per store, decided by the database. */
@Injectable()
export class StoreSyncsService {
  private readonly policy: IdempotencyResultPolicy<StoreSyncAccepted>;
  /** The 202 body as first answered (for the first answer and every replay). */
  private readonly accepted = (syncId: string, operationId: string): Promise<StoreSyncAccepted> =>
    this.commands.accepted('sync', syncId, operationId, (id) => this.syncs.findAsAccepted(id));

  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    private readonly syncs: StoreSyncsRepository,
    private readonly stores: StoreAccess,
    private readonly commands: AsyncCommands,
  ) {
    this.policy = commands.acceptedPolicy('store-sync-accepted-reference-v1', 'sync', this.accepted);
  }

  create(
    auth: WorkspaceAuthContext,
    idem: IdempotentRequestContext,
    input: CreateStoreSyncInput,
  ): Promise<IdempotentOutcome<StoreSyncAccepted>> {
    return this.idempotency.runPrepared({
      owner: auth,
      ...idem, // key, operation, fingerprint, keyError
      policy: this.policy,
      status: 202,
      prepare: async () => {
        const store = await this.stores.findState(input.storeId);
        if (!store) throw new ResourceNotFoundError('store');
        if (store.status !== 'active') throw new StoreNotActiveError(store.status);
        return input;
      },
      work: async ({ storeId }) => {
        const id = randomUUID();
        if (!(await this.syncs.insert({ id, storeId, createdBy: auth.userId })))
          throw new SyncAlreadyActiveError(await this.syncs.findActiveId(storeId));
        const operationId = await this.commands.accept({
          kind: 'store-sync.run',
          resourceType: 'store_sync',
          resourceId: id,
          actorUserId: auth.userId,
          job: runStoreSyncJob,
          payload: (operationId) => ({ syncId: id, operationId }),
          audit: (operationId) => ({
            action: 'STORE_SYNC_REQUESTED',
            entityType: 'store_sync',
            entityId: id,
            metadata: { storeId, operationId },
          }),
        });
        return this.accepted(id, operationId);
      },
    });
  }

  get(auth: WorkspaceAuthContext, id: string): Promise<StoreSyncView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const found = await this.syncs.find(id);
      if (!found) throw new ResourceNotFoundError('store sync');
      const { cursor: _cursor, ...view } = found;
      return view;
    });
  }

  /** The store's products as its syncs last saw them; 404 for a store not in the workspace. */
  listProducts(
    auth: WorkspaceAuthContext,
    storeId: string,
    query: PageQuery,
  ): Promise<{ items: StoreProductView[]; nextCursor: string | null }> {
    const after = decodeKeyCursor(query.cursor);
    return this.db.withWorkspace(auth.workspaceId, async () => {
      if (!(await this.stores.findState(storeId))) throw new ResourceNotFoundError('store');
      const rows = await this.syncs.listProducts(storeId, query.limit + 1, after);
      const items = rows.slice(0, query.limit);
      const last = items.at(-1);
      return {
        items,
        nextCursor: rows.length > query.limit && last ? encodeKeyCursor(last.platformProductId) : null,
      };
    });
  }

  list(auth: WorkspaceAuthContext, query: PageQuery) {
    const after = decodeCursor(query.cursor);
    return this.db.withWorkspace(auth.workspaceId, async () =>
      toPage(await this.syncs.list(query.limit + 1, after), query.limit),
    );
  }
}
