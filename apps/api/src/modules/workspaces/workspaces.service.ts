import { createHash, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { IdempotencyKeyReusedError } from '@listing/idempotency';
import { AuditService } from '../audit/audit.service';
import { ForbiddenError } from '../../common/domain-errors';
import { decodeCursor, encodeCursor, toPage, toPageBy } from '../../common/page-cursor';
import type { PageQuery } from '../../common/page-query';
import { WorkspaceNotFoundError } from '../auth/auth.errors';
import { InvitationNotFoundError, MemberExistsError } from './workspaces.errors';
import type { AuthContext, WorkspaceAuthContext } from '../../common/request-context';
import { InvitationsRepository } from './invitations.repository';
import { MembersRepository } from './members.repository';
import { WorkspacesRepository } from './workspaces.repository';
import type {
  Invitation,
  InvitedRole,
  MemberView,
  ReceivedInvitation,
  WorkspaceMembership,
  WorkspaceView,
} from './workspace-view';

const INVITATION_TTL_SECONDS = 7 * 24 * 3600;

// UUIDv5 namespace of workspace ids derived from (user, Idempotency-Key).
const WORKSPACE_KEY_NAMESPACE = Buffer.from('5f1c3f0e8a4b4d2e9c7a1b2c3d4e5f60', 'hex');

/**
 * RFC 9562 UUIDv5 of `${userId}:${key}`: one workspace id per user and key, for good. Written out
 * (SHA-1, two version bits) rather than adding a uuid dependency for these few lines.
 */
export function workspaceIdFor(userId: string, key: string): string {
  const hash = createHash('sha1').update(WORKSPACE_KEY_NAMESPACE).update(`${userId}:${key}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

@Injectable()
export class WorkspacesService {
  constructor(
    private readonly db: Database,
    private readonly workspaces: WorkspacesRepository,
    private readonly invitations: InvitationsRepository,
    private readonly members: MembersRepository,
    private readonly audit: AuditService,
  ) {}

  /**
   * Creates a workspace owned by the user. Joins the caller's transaction when there is one.
   *
   * With an Idempotency-Key the workspace's id is derived from (user, key), so the same request
   * sent again finds the workspace it made and answers it as created (`replayed`), however often
   * and however late; the same key with another name is refused. The idempotency records cannot
   * serve here: they live inside a workspace, and this one does not exist yet.
   */
  async create(
    userId: string,
    name: string,
    key: string | null = null,
  ): Promise<{ workspace: WorkspaceMembership; replayed: boolean }> {
    const id = key ? workspaceIdFor(userId, key) : randomUUID();
    return this.db.withWorkspace(id, async () => {
      const workspace: WorkspaceMembership = { id, name, role: 'owner' };
      if (!(await this.workspaces.insertWorkspace(id, name, userId))) {
        const first = await this.workspaces.findCreated(id);
        if (first?.createdBy !== userId || first.name !== name) throw new IdempotencyKeyReusedError();
        return { workspace, replayed: true };
      }
      await this.workspaces.insertMember(id, userId, 'owner');
      await this.audit.append({
        action: 'WORKSPACE_CREATED',
        entityType: 'workspace',
        entityId: id,
        actorUserId: userId,
      });
      return { workspace, replayed: false };
    });
  }

  list(auth: AuthContext): Promise<WorkspaceMembership[]> {
    return this.workspaces.listForCaller(auth.accessTokenHash);
  }

  /** The workspace and the caller's role in it (AuthGuard has checked the membership). */
  getWorkspace(auth: WorkspaceAuthContext): Promise<WorkspaceView> {
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const workspace = await this.members.findForMember(auth.userId);
      if (!workspace) throw new WorkspaceNotFoundError(); // left since the guard's check
      return workspace;
    });
  }

  /** The workspace's members with their roles, newest first (any member may read them). */
  listMembers(
    auth: WorkspaceAuthContext,
    query: PageQuery,
  ): Promise<{ items: MemberView[]; nextCursor: string | null }> {
    const after = decodeCursor(query.cursor);
    return this.db.withWorkspace(auth.workspaceId, async () =>
      toPageBy(await this.members.list(query.limit + 1, after), query.limit, (m) =>
        encodeCursor({ createdAt: m.joinedAt, id: m.userId }),
      ),
    );
  }

  /** The workspace's pending invitations, newest first (owners and admins only, as inviting). */
  listPendingInvitations(
    auth: WorkspaceAuthContext,
    query: PageQuery,
  ): Promise<{ items: Invitation[]; nextCursor: string | null }> {
    if (auth.role === 'member') throw new ForbiddenError('only owners and admins see the invitations');
    const after = decodeCursor(query.cursor);
    return this.db.withWorkspace(auth.workspaceId, async () =>
      toPage(await this.invitations.listPending(query.limit + 1, after), query.limit),
    );
  }

  /**
   * Invites `email` (owners and admins only). The answer is the same whether or not anyone has
   * registered the email, so this reveals nothing about other people's accounts; only a current
   * member of this workspace is reported (MEMBER_EXISTS), which the inviter may know anyway.
   */
  async invite(auth: WorkspaceAuthContext, email: string, role: InvitedRole): Promise<Invitation> {
    if (auth.role === 'member') throw new ForbiddenError('only owners and admins invite members');
    const normalized = email.trim().toLowerCase();
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const current = await this.members.roleOfEmail(normalized);
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
      return invitation;
    });
  }

  /** One open invitation of the workspace (owners and admins only, as inviting). */
  getPendingInvitation(auth: WorkspaceAuthContext, invitationId: string): Promise<Invitation> {
    if (auth.role === 'member') throw new ForbiddenError('only owners and admins see the invitations');
    return this.db.withWorkspace(auth.workspaceId, async () => {
      const invitation = await this.invitations.findPending(invitationId);
      if (!invitation) throw new InvitationNotFoundError();
      return invitation;
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
  receivedInvitations(auth: AuthContext): Promise<ReceivedInvitation[]> {
    return this.invitations.listForCaller(auth.accessTokenHash);
  }

  /**
   * Accepts an invitation addressed to the caller: they become a member with its role. Accepting
   * again (a retry after a lost answer, or a concurrent duplicate) answers the membership it made.
   */
  async accept(auth: AuthContext, invitationId: string): Promise<WorkspaceMembership> {
    const invitation = await this.invitations.findForCaller(auth.accessTokenHash, invitationId);
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
        if (joined) return { id, name, role };
      }
      // Answered before (by this caller: it is addressed to them), or a member already.
      const current = await this.workspaces.findRole(id, auth.userId);
      if (!current) throw new InvitationNotFoundError();
      return { id, name, role: current };
    });
  }

  async decline(auth: AuthContext, invitationId: string): Promise<void> {
    const invitation = await this.invitations.findForCaller(auth.accessTokenHash, invitationId);
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
