import type { OperationView } from '../operations/operation-view';

export type StoreSyncStatus = 'pending' | 'running' | 'succeeded' | 'failed';

export interface StoreSyncView {
  id: string;
  storeId: string;
  status: StoreSyncStatus;
  pages: number;
  itemsSynced: number;
  errorCode: string | null;
  createdAt: string;
  completedAt: string | null;
}

export interface StoreSyncAccepted {
  sync: StoreSyncView;
  operation: OperationView;
}

/** A store's online product as its syncs last saw it. */
export interface StoreProductView {
  platformProductId: string;
  title: string;
  price: string | null;
  platformStatus: string;
  platformCreatedAt: string | null;
  lastSyncId: string;
  firstSeenAt: string;
  lastSeenAt: string;
}
