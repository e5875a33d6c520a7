/**
 * Typed domain errors with stable string codes. Services throw these; ProblemDetailsFilter maps
 * each code to an HTTP status once (see problem-details.filter.ts).
 */
export abstract class DomainError extends Error {
  abstract readonly code: string;
  /** Extra, safe fields for the problem+json body. */
  readonly extensions: Record<string, unknown> = {};
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationFailedError extends DomainError {
  readonly code = 'VALIDATION_FAILED';
  constructor(readonly issues: Array<{ path: string; message: string }>) {
    super('the request is invalid');
    this.extensions.errors = issues;
  }
}

/** The body is not a JSON text (empty, not UTF-8, malformed): 400. */
export class InvalidJsonError extends DomainError {
  readonly code = 'INVALID_JSON';
}

export class UnauthenticatedError extends DomainError {
  readonly code = 'UNAUTHENTICATED';
  constructor(message = 'a valid bearer token is required') {
    super(message);
  }
}

export class InvalidCredentialsError extends DomainError {
  readonly code = 'INVALID_CREDENTIALS';
  constructor() {
    super('email or password is wrong');
  }
}

export class InvalidRefreshTokenError extends DomainError {
  readonly code = 'INVALID_REFRESH_TOKEN';
  constructor() {
    super('the refresh token is invalid, expired or already used');
  }
}

export class EmailTakenError extends DomainError {
  readonly code = 'EMAIL_TAKEN';
  constructor() {
    super('an account with this email exists');
  }
}

export class WorkspaceNotFoundError extends DomainError {
  readonly code = 'WORKSPACE_NOT_FOUND';
  constructor() {
    super('workspace not found');
  }
}

export class ForbiddenError extends DomainError {
  readonly code = 'FORBIDDEN';
}

/** The user already belongs to the workspace; the role is not changed by adding them again. */
export class MemberExistsError extends DomainError {
  readonly code = 'MEMBER_EXISTS';
  constructor(role: string) {
    super('this user is already a member of the workspace');
    this.extensions.role = role;
  }
}

/** No open invitation with this id addressed to the caller (unknown, expired, or answered). */
export class InvitationNotFoundError extends DomainError {
  readonly code = 'INVITATION_NOT_FOUND';
  constructor() {
    super('invitation not found, expired or already answered');
  }
}

export class ResourceNotFoundError extends DomainError {
  readonly code = 'RESOURCE_NOT_FOUND';
  constructor(what: string) {
    super(`${what} not found`);
  }
}

export class RateLimitedError extends DomainError {
  readonly code = 'RATE_LIMITED';
  constructor(readonly retryAfterSeconds: number) {
    super('too many requests');
  }
}

/** If-Match names another revision than the current one. */
export class RevisionMismatchError extends DomainError {
  readonly code = 'REVISION_MISMATCH';
  constructor(current: number) {
    super('the record has changed since the revision in If-Match');
    this.extensions.currentRevision = current;
  }
}

export class IfMatchRequiredError extends DomainError {
  readonly code = 'IF_MATCH_REQUIRED';
  constructor() {
    super('this update requires If-Match with the revision it is based on');
  }
}

export class UnknownFeatureError extends DomainError {
  readonly code = 'FEATURE_NOT_FOUND';
  constructor(featureId: string) {
    super(`unknown feature ${featureId}`);
  }
}

/** A stored snapshot does not match its row or parent: refuse to serve it. */
export class IntegrityError extends DomainError {
  readonly code = 'INTEGRITY_VIOLATION';
}
