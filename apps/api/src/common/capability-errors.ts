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
  constructor(existing?: { id: string; status: string }) {
    super(
      existing?.status === 'outcome_unknown'
        ? 'this product draft has a publication to this store whose outcome is unknown; retry that publication'
        : 'this product draft has already been published to this store',
    );
    if (existing) {
      this.extensions.publicationId = existing.id;
      this.extensions.publicationStatus = existing.status;
    }
  }
}

/** Only a publication whose outcome is unknown can be retried (the others are decided or running). */
export class PublicationNotRetryableError extends DomainError {
  readonly code = 'PUBLICATION_NOT_RETRYABLE';
  constructor(status: string) {
    super('only a publication whose outcome is unknown can be retried');
    this.extensions.publicationStatus = status;
  }
}

export class SyncAlreadyActiveError extends DomainError {
  readonly code = 'SYNC_ALREADY_ACTIVE';
  constructor() {
    super('a sync of this store is already pending or running; retry once it has finished');
  }
}
