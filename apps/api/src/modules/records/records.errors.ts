import { DomainError, defineErrors } from '../../common/error-catalogue';

/** Revisioned records (If-Match itself is parsed in common/http-params.ts). */
export const RECORD_ERRORS = defineErrors({
  REVISION_MISMATCH: {
    status: 412,
    description:
      'The resource has changed since the revision named in If-Match; `currentRevision` is the current one.',
  },
});

/** If-Match names another revision than the current one. */
export class RevisionMismatchError extends DomainError<typeof RECORD_ERRORS> {
  readonly code = 'REVISION_MISMATCH';
  constructor(current: number) {
    super('the record has changed since the revision in If-Match');
    this.extensions.currentRevision = current;
  }
}
