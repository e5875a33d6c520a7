import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { AuditRepository } from '../audit/audit.repository';
import { AuthRepository } from '../auth/auth.repository';
import { ForbiddenError, InvitationNotFoundError, MemberExistsError } from '../../common/domain-errors';
import type { AuthContext, WorkspaceAuthContext } from '../../common/request-context';
import {
  InvitationsRepository,
  type Invitation,
  type InvitedRole,
  type ReceivedInvitation,
} from './invitations.repository';
import { WorkspacesRepository, type WorkspaceMembership } from './workspaces.repository';

const INVITATION_TTL_SECONDS = 7 * 24 * 3600;

@Injectable()
export class WorkspacesService {
  constructor(
    private readonly db: Database,
    private readonly workspaces: WorkspacesRepository,
    private readonly invitations: InvitationsRepository,
    private readonly audit: AuditRepository,
    private readonly users: AuthRepository,
  ) {}

  /** Creates a workspace owned by the user. Joins the caller's transaction when there is one. */
  async create(userId: string, name: string): Promise<WorkspaceMembership> {
    const id = randomUUID();
    await this.db.withWorkspace(id, async () => {
      await this.workspaces.insertWorkspace(id, name, userId);
      await this.workspaces.insertMember(id, userId, 'owner');
      await this.audit.append({
        action: 'WORKSPACE_CREATED',
        entityType: 'workspace',
        entityId: id,
        actorUserId: userId,
      });
    });
    return { id, name, role: 'owner' };
  }

  list(userId: string): Promise<WorkspaceMembership[]> {
    return this.workspaces.listForUser(userId);
  }

  /**
   * Invites `email` (owners and admins only). The answer is the same whether or not anyone has
   * registered the email, so this reveals nothing about other people's accounts; only a current
   * member of this workspace is reported (MEMBER_EXISTS), which the inviter may know anyway.
   */
  async invite(
    auth: WorkspaceAuthContext,
    email: string,
    role: InvitedRole,
  ): Promise<{ invitation: Invitation }> {
    if (auth.role === 'member') throw new ForbiddenError('only owners and admins invite members');
    const normalized = email.trim().toLowerCase();
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const user = await this.users.findUserByEmail(normalized);
      const current = user && (await this.workspaces.findRole(auth.workspaceId, user.id));
      if (current) throw new MemberExistsError(current);
      const invitation = await this.invitations.upsertOpen({
        id: randomUUID(),
        workspaceId: auth.workspaceId,
        email: normalized,
        role,
        invitedBy: auth.userId,
        ttlSeconds: INVITATION_TTL_SECONDS,
      });
      // The invitation id and role only: the email stays in its own row.
      await this.audit.append({
        action: 'MEMBER_INVITED',
        entityType: 'workspace_invitation',
        entityId: invitation.id,
        actorUserId: auth.userId,
        metadata: { role },
      });
      return { invitation };
    });
  }

  /** Withdraws an open invitation of the workspace (owners and admins only). */
  async withdraw(auth: WorkspaceAuthContext, invitationId: string): Promise<void> {
    if (auth.role === 'member') throw new ForbiddenError('only owners and admins withdraw invitations');
    await this.db.withWorkspace(auth.workspaceId, async () => {
      if (!(await this.invitations.withdraw(invitationId))) throw new InvitationNotFoundError();
      await this.audit.append({
        action: 'INVITATION_WITHDRAWN',
        entityType: 'workspace_invitation',
        entityId: invitationId,
        actorUserId: auth.userId,
      });
    });
  }

  /** The caller's open invitations, across workspaces. */
  receivedInvitations(userId: string): Promise<ReceivedInvitation[]> {
    return this.invitations.listForUser(userId);
  }

  /**
   * Accepts an invitation addressed to the caller: they become a member with its role. Accepting
   * again (a retry after a lost answer, or a concurrent duplicate) answers the membership it made.
   */
  async accept(auth: AuthContext, invitationId: string): Promise<{ workspace: WorkspaceMembership }> {
    const invitation = await this.invitations.findForUser(auth.userId, invitationId);
    if (!invitation || (invitation.state !== 'open' && invitation.state !== 'accepted')) {
      throw new InvitationNotFoundError();
    }
    const { id, name } = invitation.workspace;
    return this.db.withWorkspace(id, async () => {
      const role = await this.invitations.answer(invitationId, 'accepted');
      if (role) {
        // Already a member (added since the invitation): the membership stays as it is.
        const joined = await this.workspaces.insertMember(id, auth.userId, role);
        await this.audit.append({
          action: 'INVITATION_ACCEPTED',
          entityType: 'workspace_invitation',
          entityId: invitationId,
          actorUserId: auth.userId,
          metadata: { role, joined },
        });
        if (joined) return { workspace: { id, name, role } };
      }
      // Answered before (by this caller: it is addressed to them), or a member already.
      const current = await this.workspaces.findRole(id, auth.userId);
      if (!current) throw new InvitationNotFoundError();
      return { workspace: { id, name, role: current } };
    });
  }

  async decline(auth: AuthContext, invitationId: string): Promise<void> {
    const invitation = await this.invitations.findForUser(auth.userId, invitationId);
    if (invitation?.state !== 'open') throw new InvitationNotFoundError();
    await this.db.withWorkspace(invitation.workspace.id, async () => {
      if (!(await this.invitations.answer(invitationId, 'declined'))) throw new InvitationNotFoundError();
      await this.audit.append({
        action: 'INVITATION_DECLINED',
        entityType: 'workspace_invitation',
        entityId: invitationId,
        actorUserId: auth.userId,
      });
    });
  }
}
