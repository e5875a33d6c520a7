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
