import type { OperationView } from '../operations/operation-view';

/** verification_failed: no verdict for the current credentials (see sql/014); replacing them retries. */
export type StoreStatus = 'pending_verification' | 'active' | 'invalid_credentials' | 'verification_failed';

/** A store as the API shows it. Credentials are never part of it, not even masked. */
export interface StoreView {
  id: string;
  platform: 'sim';
  storeExternalId: string;
  status: StoreStatus;
  credentialVersion: number;
  shopName: string | null;
  createdAt: string;
  /** When the credentials of `credentialVersion` were stored. */
  credentialsUpdatedAt: string;
}

/** The 202 body of create / replace-credentials. */
export interface StoreAccepted {
  store: StoreView;
  operation: OperationView;
}

/** The 202 body of a credential check: what is checked, and the operation that says how it went. */
export interface CredentialCheckAccepted {
  check: { storeId: string; credentialVersion: number };
  operation: OperationView;
}
