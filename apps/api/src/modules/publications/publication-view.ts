import type { OperationView } from '../operations/operation-view';

/**
 * outcome_unknown: the marketplace never confirmed the create and may have applied it (sql/014).
 * It keeps the (store, draft) slot; POST .../publications/{id}/retry sends the same create again.
 */
export type PublicationStatus = 'pending' | 'publishing' | 'published' | 'failed' | 'outcome_unknown';

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
