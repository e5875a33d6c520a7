import { DomainError, defineErrors } from '../../common/error-catalogue';

/**
 * Accounts, sessions and AuthGuard's membership check (UNAUTHENTICATED and RATE_LIMITED are
 * common/domain-errors.ts's).
 */
export const AUTH_ERRORS = defineErrors({
  INVALID_CREDENTIALS: { status: 401, description: 'The email or the password is wrong.' },
  INVALID_REFRESH_TOKEN: {
    status: 401,
    description: 'The refresh token is invalid, expired or already used: log in again.',
  },
  EMAIL_TAKEN: { status: 409, description: 'An account with this email exists.' },
  WORKSPACE_NOT_FOUND: {
    status: 404,
    description: 'No such workspace, or the caller is not a member of it (the two are not told apart).',
  },
});

export class InvalidCredentialsError extends DomainError<typeof AUTH_ERRORS> {
  readonly code = 'INVALID_CREDENTIALS';
  constructor() {
    super('email or password is wrong');
  }
}

export class InvalidRefreshTokenError extends DomainError<typeof AUTH_ERRORS> {
  readonly code = 'INVALID_REFRESH_TOKEN';
  constructor() {
    super('the refresh token is invalid, expired or already used');
  }
}

export class EmailTakenError extends DomainError<typeof AUTH_ERRORS> {
  readonly code = 'EMAIL_TAKEN';
  constructor() {
    super('an account with this email exists');
  }
}

/** What AuthGuard answers for a workspace the caller is no member of: ids cannot be probed. */
export class WorkspaceNotFoundError extends DomainError<typeof AUTH_ERRORS> {
  readonly code = 'WORKSPACE_NOT_FOUND';
  constructor() {
    super('workspace not found');
  }
}
