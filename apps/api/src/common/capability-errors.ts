import { DomainError } from './domain-errors';

/** Conflicts of the first-batch capabilities (stores, publications, syncs, AI tasks). */

export class StoreAlreadyConnectedError extends DomainError {
  readonly code = 'STORE_ALREADY_CONNECTED';
  constructor() {
    super('this marketplace store is already connected to the workspace');
  }
}

export class StoreNotActiveError extends DomainError {
  readonly code = 'STORE_NOT_ACTIVE';
  constructor(status: string) {
    super('the store must be active (verified credentials) for this command');
    this.extensions.storeStatus = status;
  }
}

export class AlreadyPublishedError extends DomainError {
  readonly code = 'ALREADY_PUBLISHED';
  constructor() {
    super('this product draft has already been published to this store');
  }
}

export class SyncAlreadyActiveError extends DomainError {
  readonly code = 'SYNC_ALREADY_ACTIVE';
  constructor() {
    super('a sync of this store is already pending or running; retry once it has finished');
  }
}
