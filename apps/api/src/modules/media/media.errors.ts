import { DomainError, defineErrors } from '../../common/error-catalogue';

/** Media uploads (LENGTH_REQUIRED is common/domain-errors.ts's; transfers have their own file). */
export const MEDIA_ERRORS = defineErrors({
  MEDIA_TOO_LARGE: {
    status: 413,
    description: 'The image is larger than the limit (`limitBytes`).',
  },
  MEDIA_TYPE_UNSUPPORTED: {
    status: 415,
    description: 'Only image/png, image/jpeg, image/webp and image/gif are accepted.',
  },
  MEDIA_TYPE_MISMATCH: {
    status: 422,
    description:
      'The bytes are not the declared image type, or no accepted image at all (`declaredType`, `detectedType`).',
  },
  MEDIA_SIZE_MISMATCH: {
    status: 422,
    description: 'The content does not have the size the upload declared (`declaredSize`, `actualSize`).',
  },
  MEDIA_CONTENT_UNAVAILABLE: {
    status: 404,
    description:
      'The media has no bytes to download here (yet): no content before it is uploaded, none once it failed, no thumbnail until it is ready (`currentStatus`).',
  },
  MEDIA_STATE_CONFLICT: {
    status: 409,
    description:
      "The media's current status (`currentStatus`) does not allow this step (e.g. complete before upload).",
  },
});

export class MediaTooLargeError extends DomainError<typeof MEDIA_ERRORS> {
  readonly code = 'MEDIA_TOO_LARGE';
  constructor(limit: number) {
    super(`the image is larger than the limit of ${limit} bytes`);
    this.extensions.limitBytes = limit;
  }
}

export class MediaTypeUnsupportedError extends DomainError<typeof MEDIA_ERRORS> {
  readonly code = 'MEDIA_TYPE_UNSUPPORTED';
  constructor() {
    super('only image/png, image/jpeg, image/webp and image/gif are accepted');
  }
}

/** The bytes are not the image type that was declared (or not an accepted image at all). */
export class MediaTypeMismatchError extends DomainError<typeof MEDIA_ERRORS> {
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

export class MediaSizeMismatchError extends DomainError<typeof MEDIA_ERRORS> {
  readonly code = 'MEDIA_SIZE_MISMATCH';
  constructor(declared: number, actual: number) {
    super(`the content has ${actual} bytes; the upload declared ${declared}`);
    this.extensions.declaredSize = declared;
    this.extensions.actualSize = actual;
  }
}

/** A step that the media's current status does not allow (e.g. complete before upload). */
export class MediaStateConflictError extends DomainError<typeof MEDIA_ERRORS> {
  readonly code = 'MEDIA_STATE_CONFLICT';
  constructor(status: string, action: string) {
    super(`cannot ${action} a media in status ${status}`);
    this.extensions.currentStatus = status;
  }
}

/** A download of bytes the media does not have (yet): content before upload or after failing, a thumbnail before ready. */
export class MediaContentUnavailableError extends DomainError<typeof MEDIA_ERRORS> {
  readonly code = 'MEDIA_CONTENT_UNAVAILABLE';
  constructor(what: 'content' | 'thumbnail', status: string) {
    super(`a media in status ${status} has no ${what} to download`);
    this.extensions.currentStatus = status;
  }
}
