import { DomainError } from '../../common/domain-errors';

/** Typed errors of media and material transfers; problem-details.filter.ts maps the codes. */

export class MediaTooLargeError extends DomainError {
  readonly code = 'MEDIA_TOO_LARGE';
  constructor(limit: number) {
    super(`the image is larger than the limit of ${limit} bytes`);
    this.extensions.limitBytes = limit;
  }
}

export class MediaTypeUnsupportedError extends DomainError {
  readonly code = 'MEDIA_TYPE_UNSUPPORTED';
  constructor() {
    super('only image/png, image/jpeg, image/webp and image/gif are accepted');
  }
}

/** The bytes are not the image type that was declared (or not an accepted image at all). */
export class MediaTypeMismatchError extends DomainError {
  readonly code = 'MEDIA_TYPE_MISMATCH';
  constructor(declared: string, actual: string | null) {
    super(
      actual
        ? `the content is ${actual}, not the declared ${declared}`
        : `the content is not an accepted image (declared ${declared})`,
    );
    this.extensions.declaredType = declared;
    this.extensions.detectedType = actual;
  }
}

export class MediaSizeMismatchError extends DomainError {
  readonly code = 'MEDIA_SIZE_MISMATCH';
  constructor(declared: number, actual: number) {
    super(`the content has ${actual} bytes; the upload declared ${declared}`);
    this.extensions.declaredSize = declared;
    this.extensions.actualSize = actual;
  }
}

export class ContentLengthRequiredError extends DomainError {
  readonly code = 'LENGTH_REQUIRED';
  constructor() {
    super('send the content with a Content-Length header');
  }
}

/** A step that the media's current status does not allow (e.g. complete before upload). */
export class MediaStateConflictError extends DomainError {
  readonly code = 'MEDIA_STATE_CONFLICT';
  constructor(status: string, action: string) {
    super(`cannot ${action} a media in status ${status}`);
    this.extensions.currentStatus = status;
  }
}

export class SourceNotAllowedError extends DomainError {
  readonly code = 'SOURCE_NOT_ALLOWED';
  constructor(reason: string) {
    super(`the source URL is not allowed: ${reason}`);
  }
}

/** The workspace already has a transfer for this source; its ids are in the problem body. */
export class MaterialTransferExistsError extends DomainError {
  readonly code = 'MATERIAL_TRANSFER_EXISTS';
  constructor(transferId: string, operationId: string) {
    super('a transfer of this source already exists in the workspace');
    this.extensions.transferId = transferId;
    this.extensions.operationId = operationId;
  }
}
