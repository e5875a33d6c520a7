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
  PUBLICATION_NOT_LIVE: {
    status: 409,
    description:
      "Only a published product can be updated; `publicationStatus` is the publication's status (wait for it, or retry it when its outcome is unknown).",
  },
  REVISION_NOT_NEWER: {
    status: 409,
    description:
      'An update must be newer than the revision live on the product and than every update already requested; `newestRevision` is the newest of those.',
  },
});

export class AlreadyPublishedError extends DomainError<typeof PUBLICATION_ERRORS> {
  readonly code = 'ALREADY_PUBLISHED';
  constructor(existing?: { id: string; status: string }) {
    super(
      existing?.status === 'outcome_unknown'
        ? 'this product draft has a publication to this store whose outcome is unknown; retry that publication'
        : 'this product draft has already been published to this store; push a newer revision with POST …/publications/{publicationId}/updates',
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

/** An update needs a live product: a publication still on its way (or failed) has none. */
export class PublicationNotLiveError extends DomainError<typeof PUBLICATION_ERRORS> {
  readonly code = 'PUBLICATION_NOT_LIVE';
  constructor(status: string) {
    super(`the publication is ${status}: only a published product can be updated`);
    this.extensions.publicationStatus = status;
  }
}

/** Updates go forward only: an older (or the same) revision would overwrite a newer one. */
export class RevisionNotNewerError extends DomainError<typeof PUBLICATION_ERRORS> {
  readonly code = 'REVISION_NOT_NEWER';
  constructor(revision: number, newest: number) {
    super(`revision ${revision} is not newer than revision ${newest}, already live or requested`);
    this.extensions.newestRevision = newest;
  }
}
