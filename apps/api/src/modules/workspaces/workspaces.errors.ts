import { DomainError, defineErrors } from '../../common/error-catalogue';

/** Membership and invitations (WORKSPACE_NOT_FOUND is AuthGuard's: auth.errors.ts). */
export const WORKSPACE_ERRORS = defineErrors({
  MEMBER_EXISTS: {
    status: 409,
    description: 'The user is already a member of the workspace; `role` is their current role (unchanged).',
  },
  INVITATION_NOT_FOUND: {
    status: 404,
    description: 'No open invitation with this id is addressed to the caller (unknown, expired or answered).',
  },
});

/** The user already belongs to the workspace; the role is not changed by adding them again. */
export class MemberExistsError extends DomainError<typeof WORKSPACE_ERRORS> {
  readonly code = 'MEMBER_EXISTS';
  constructor(role: string) {
    super('this user is already a member of the workspace');
    this.extensions.role = role;
  }
}

/** No open invitation with this id addressed to the caller (unknown, expired, or answered). */
export class InvitationNotFoundError extends DomainError<typeof WORKSPACE_ERRORS> {
  readonly code = 'INVITATION_NOT_FOUND';
  constructor() {
    super('invitation not found, expired or already answered');
  }
}
