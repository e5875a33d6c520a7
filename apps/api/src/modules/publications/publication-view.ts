import type { OperationView } from '../operations/operation-view';

export type PublicationStatus = 'pending' | 'publishing' | 'published' | 'failed';

export interface PublicationView {
  id: string;
  storeId: string;
  draftId: string;
  revision: number;
  status: PublicationStatus;
  platformProductId: string | null;
  errorCode: string | null;
  createdAt: string;
  publishedAt: string | null;
}

export interface PublicationAccepted {
  publication: PublicationView;
  operation: OperationView;
}
