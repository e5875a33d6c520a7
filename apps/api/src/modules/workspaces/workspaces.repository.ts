import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { sql, workspaceMembers, workspaces, type SqlRow } from '@listing/db';

import type { WorkspaceMembership } from './workspace-view';

@Injectable()
export class WorkspacesRepository {
  constructor(private readonly db: Database) {}

  /** Runs inside withWorkspace(id): RLS only admits the row being created. */
  /** Runs inside withWorkspace(id). False when a workspace with this id exists already. */
  async insertWorkspace(id: string, name: string, createdBy: string): Promise<boolean> {
    const r = await this.db.executor.execute(
      sql`insert into workspaces (id, name, created_by) values (${id}, ${name}, ${createdBy}) on conflict (id) do nothing`,
    );
    return r.rowCount === 1;
  }

  /** Inside withWorkspace(id): the workspace's name and creator as created (neither changes). */
  async findCreated(id: string): Promise<{ name: string; createdBy: string } | undefined> {
    const { rows } = await this.db.executor.execute<Pick<SqlRow<typeof workspaces>, 'name' | 'created_by'>>(
      sql`select name, created_by from workspaces where id = ${id}`,
    );
    return rows[0] && { name: rows[0].name, createdBy: rows[0].created_by };
  }

  async insertMember(
    workspaceId: string,
    userId: string,
    role: WorkspaceMembership['role'],
  ): Promise<boolean> {
    const result = await this.db.executor.execute(sql`
      insert into workspace_members (workspace_id, user_id, role) values (${workspaceId}, ${userId}, ${role})
      on conflict do nothing`);
    return result.rowCount === 1;
  }

  async findRole(workspaceId: string, userId: string): Promise<WorkspaceMembership['role'] | undefined> {
    const { rows } = await this.db.executor.execute<Pick<SqlRow<typeof workspaceMembers>, 'role'>>(sql`
      select role from workspace_members where workspace_id = ${workspaceId} and user_id = ${userId}`);
    return rows[0]?.role;
  }

  /** All of one user's workspaces, across tenants (SECURITY DEFINER function, ids/names/roles). */
  /** The caller's workspaces: the caller is whoever the live access token belongs to (sql/024). */
  async listForCaller(accessTokenHash: Buffer): Promise<WorkspaceMembership[]> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof workspaceMembers>, 'workspace_id' | 'role'> & Pick<SqlRow<typeof workspaces>, 'name'>
    >(sql`select workspace_id, name, role from app_user_workspaces(${accessTokenHash})`);
    return rows.map((r) => ({ id: r.workspace_id, name: r.name, role: r.role }));
  }
}
