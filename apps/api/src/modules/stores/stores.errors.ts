import { DomainError, defineErrors } from '../../common/error-catalogue';

export const STORE_ERRORS = defineErrors({
  STORE_ALREADY_CONNECTED: {
    status: 409,
    description: 'This marketplace store is already connected to the workspace; `storeId` names it.',
  },
  STORE_NOT_ACTIVE: {
    status: 409,
    description:
      'The store must be active (verified credentials) for this command; `storeStatus` is its status.',
  },
});

export class StoreAlreadyConnectedError extends DomainError<typeof STORE_ERRORS> {
  readonly code = 'STORE_ALREADY_CONNECTED';
  /** `storeId` names the connected store, like the other conflicts name what they conflict with. */
  constructor(storeId?: string) {
    super('this marketplace store is already connected to the workspace');
    if (storeId) this.extensions.storeId = storeId;
  }
}

/** Publications and syncs need an active store too. */
export class StoreNotActiveError extends DomainError<typeof STORE_ERRORS> {
  readonly code = 'STORE_NOT_ACTIVE';
  constructor(status: string) {
    super('the store must be active (verified credentials) for this command');
    this.extensions.storeStatus = status;
  }
}
