import { DomainError, defineErrors } from '../../common/error-catalogue';

export const PUBLICATION_ERRORS = defineErrors({
  ALREADY_PUBLISHED: {
    status: 409,
    description:
      'The product draft has a publication to this store (`publicationId`); one whose outcome is unknown is retried, not published again.',
  },
  PUBLICATION_NOT_RETRYABLE: {
    status: 409,
    description:
      'Only a publication whose outcome is unknown can be retried; `publicationStatus` is its status.',
  },
});

export class AlreadyPublishedError extends DomainError<typeof PUBLICATION_ERRORS> {
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
export class PublicationNotRetryableError extends DomainError<typeof PUBLICATION_ERRORS> {
  readonly code = 'PUBLICATION_NOT_RETRYABLE';
  constructor(status: string) {
    super('only a publication whose outcome is unknown can be retried');
    this.extensions.publicationStatus = status;
  }
}
