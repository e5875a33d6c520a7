import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { AuthRepository } from '../auth/auth.repository';
import { ForbiddenError, MemberExistsError, ResourceNotFoundError } from '../../common/domain-errors';
import type { WorkspaceAuthContext } from '../../common/request-context';
import { WorkspacesRepository, type WorkspaceMembership } from './workspaces.repository';

@Injectable()
export class WorkspacesService {
  constructor(
    private readonly db: Database,
    private readonly workspaces: WorkspacesRepository,
    private readonly users: AuthRepository,
  ) {}

  /** Creates a workspace owned by the user. Joins the caller's transaction when there is one. */
  async create(userId: string, name: string): Promise<WorkspaceMembership> {
    const id = randomUUID();
    await this.db.withWorkspace(id, async () => {
      await this.workspaces.insertWorkspace(id, name, userId);
      await this.workspaces.insertMember(id, userId, 'owner');
    });
    return { id, name, role: 'owner' };
  }

  list(userId: string): Promise<WorkspaceMembership[]> {
    return this.workspaces.listForUser(userId);
  }

  async addMember(auth: WorkspaceAuthContext, email: string, role: 'admin' | 'member') {
    if (auth.role === 'member') throw new ForbiddenError('only owners and admins add members');
    const user = await this.users.findUserByEmail(email);
    if (!user) throw new ResourceNotFoundError('user');
    await this.db.withWorkspace(auth.workspaceId, async () => {
      if (await this.workspaces.insertMember(auth.workspaceId, user.id, role)) return;
      // Answering 201 with the requested role would report a change that was never made.
      throw new MemberExistsError((await this.workspaces.findRole(auth.workspaceId, user.id)) ?? role);
    });
    return { workspaceId: auth.workspaceId, userId: user.id, role };
  }
}
