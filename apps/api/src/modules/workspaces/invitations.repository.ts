import { Injectable } from '@nestjs/common';
import { Database, sql, workspaceInvitations, workspaces, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder, type PagePosition } from '../../common/page-cursor';
import type { Invitation, InvitedRole, ReceivedInvitation } from './workspace-view';

/** SQL of workspace_invitations (sql/018). */
@Injectable()
export class InvitationsRepository {
  constructor(private readonly db: Database) {}

  /**
   * Inside withWorkspace: the workspace's open invitation for `email`, created, or else sent
   * again: the new role, a fresh expiry and sent_at (the inviter's latest word; see sql/018 for
   * why sent_at decides who may see it). The id of an open one is kept.
   */
  async upsertOpen(input: {
    id: string;
    workspaceId: string;
    email: string;
    role: InvitedRole;
    invitedBy: string;
    ttlSeconds: number;
  }): Promise<Invitation> {
    const { rows } = await this.db.executor.execute<InvitationRow>(sql`
      insert into workspace_invitations (id, workspace_id, email, role, invited_by, expires_at)
      values (${input.id}, ${input.workspaceId}, ${input.email}, ${input.role}, ${input.invitedBy},
              now() + make_interval(secs => ${input.ttlSeconds}))
      on conflict (workspace_id, email) where accepted_at is null and declined_at is null
      do update set role = excluded.role, invited_by = excluded.invited_by, expires_at = excluded.expires_at,
                    sent_at = now()
      returning id, email, role, created_at, expires_at`);
    return toInvitation(rows[0]!);
  }

  /**
   * Inside withWorkspace: the workspace's pending invitations (open, unexpired), newest first on
   * (created_at to the millisecond, id): a range of workspace_invitations_open_page_idx (sql/022).
   * created_at never changes (inviting again renews expires_at and sent_at), so pages hold still.
   */
  async listPending(limit: number, after?: PagePosition): Promise<Invitation[]> {
    const { rows } = await this.db.executor.execute<InvitationRow>(sql`
      select id, email, role, created_at, expires_at from workspace_invitations
       where workspace_id = app_current_workspace() and accepted_at is null and declined_at is null
         and expires_at > now()
         ${afterCursor(after)}
       ${pageOrder()}
       limit ${limit}`);
    return rows.map(toInvitation);
  }

  /** Inside withWorkspace: one open, unexpired invitation of the workspace. */
  async findPending(id: string): Promise<Invitation | undefined> {
    const { rows } = await this.db.executor.execute<InvitationRow>(sql`
      select id, email, role, created_at, expires_at from workspace_invitations
       where workspace_id = app_current_workspace() and id = ${id}
         and accepted_at is null and declined_at is null and expires_at > now()`);
    return rows[0] && toInvitation(rows[0]);
  }

  /** Open, unexpired invitations addressed to the user's email, across workspaces (sql/018). */
  async listForCaller(accessTokenHash: Buffer): Promise<ReceivedInvitation[]> {
    const { rows } = await this.db.executor.execute<ReceivedRow>(
      sql`select * from app_user_invitations(${accessTokenHash})`,
    );
    return rows.map(toReceived);
  }

  /** The invitation with this id addressed to the user, in any state (sql/018), or undefined. */
  async findForCaller(
    accessTokenHash: Buffer,
    id: string,
  ): Promise<(ReceivedInvitation & { state: 'open' | 'expired' | 'accepted' | 'declined' }) | undefined> {
    // The state by the database's clock, the one answer() decides by.
    const { rows } = await this.db.executor.execute<
      ReceivedRow & { state: 'open' | 'expired' | 'accepted' | 'declined' }
    >(sql`
      select *, case when accepted_at is not null then 'accepted' when declined_at is not null then 'declined'
                     when expires_at <= now() then 'expired' else 'open' end as state
        from app_user_invitation(${accessTokenHash}, ${id})`);
    const r = rows[0];
    return r && { ...toReceived(r), state: r.state };
  }

  /** Inside withWorkspace: deletes an open invitation; false when there is none with this id. */
  async withdraw(id: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      delete from workspace_invitations
       where workspace_id = app_current_workspace() and id = ${id}
         and accepted_at is null and declined_at is null`);
    return r.rowCount === 1;
  }

  /**
   * Inside withWorkspace: answers an open, unexpired invitation once. Returns its role, or
   * undefined when it was answered (by a concurrent request), expired or withdrawn meanwhile.
   */
  async answer(id: string, answer: 'accepted' | 'declined'): Promise<InvitedRole | undefined> {
    const column = answer === 'accepted' ? sql`accepted_at` : sql`declined_at`;
    const { rows } = await this.db.executor.execute<{ role: InvitedRole }>(sql`
      update workspace_invitations set ${column} = now()
       where id = ${id} and accepted_at is null and declined_at is null and expires_at > now()
      returning role`);
    return rows[0]?.role;
  }
}

type InvitationRow = Pick<
  SqlRow<typeof workspaceInvitations>,
  'id' | 'email' | 'role' | 'created_at' | 'expires_at'
>;

function toInvitation(row: InvitationRow): Invitation {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    createdAt: new Date(row.created_at).toISOString(),
    expiresAt: new Date(row.expires_at).toISOString(),
  };
}

/** A row of app_user_invitations() / app_user_invitation() (sql/018). */
type ReceivedRow = Pick<
  SqlRow<typeof workspaceInvitations>,
  'id' | 'workspace_id' | 'role' | 'created_at' | 'expires_at'
> & { workspace_name: SqlRow<typeof workspaces>['name'] };

function toReceived(r: ReceivedRow): ReceivedInvitation {
  return {
    id: r.id,
    workspace: { id: r.workspace_id, name: r.workspace_name },
    role: r.role,
    createdAt: new Date(r.created_at).toISOString(),
    expiresAt: new Date(r.expires_at).toISOString(),
  };
}
