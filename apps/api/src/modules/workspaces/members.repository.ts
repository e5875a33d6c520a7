import { Injectable } from '@nestjs/common';
import { Database, sql, users, workspaceMembers, workspaces, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder, type PagePosition } from '../../common/page-cursor';
import type { MemberView, WorkspaceView } from './workspace-view';

/** Reads of one workspace and its members, inside withWorkspace (RLS admits no other). */
@Injectable()
export class MembersRepository {
  constructor(private readonly db: Database) {}

  /**
   * The bound workspace with `userId`'s role in it, read together: a membership gone since the
   * request was authenticated reads as no workspace.
   */
  async findForMember(userId: string): Promise<WorkspaceView | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof workspaces>, 'id' | 'name' | 'created_at'> &
        Pick<SqlRow<typeof workspaceMembers>, 'role'>
    >(sql`
      select w.id, w.name, w.created_at, m.role
        from workspaces w
        join workspace_members m on m.workspace_id = w.id and m.user_id = ${userId}
       where w.id = app_current_workspace()`);
    const r = rows[0];
    return r && { id: r.id, name: r.name, role: r.role, createdAt: new Date(r.created_at).toISOString() };
  }

  /**
   * The bound workspace's members, newest first on (joined at, to the millisecond, user id): a
   * range of workspace_members_page_idx (sql/022).
   */
  /** The role of the bound workspace's member with this email, if one has it (sql/024). */
  async roleOfEmail(email: string): Promise<WorkspaceView['role'] | undefined> {
    const { rows } = await this.db.executor.execute<{ role: WorkspaceView['role'] | null }>(
      sql`select app_member_role_by_email(${email}) as role`,
    );
    return rows[0]?.role ?? undefined;
  }

  async list(limit: number, after?: PagePosition): Promise<MemberView[]> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof workspaceMembers>, 'user_id' | 'role' | 'created_at'> &
        Pick<SqlRow<typeof users>, 'email'>
    >(sql`
      select m.user_id, app_member_email(m.user_id) as email, m.role, m.created_at
        from workspace_members m
       where m.workspace_id = app_current_workspace()
         ${afterCursor(after, sql`m.created_at`, sql`m.user_id`)}
       ${pageOrder(sql`m.created_at`, sql`m.user_id`)}
       limit ${limit}`);
    return rows.map((r) => ({
      userId: r.user_id,
      email: r.email,
      role: r.role,
      joinedAt: new Date(r.created_at).toISOString(),
    }));
  }
}
