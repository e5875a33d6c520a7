import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';

/** Inserts a user and a workspace they own, as the owner role (fixtures bypass RLS). */
export async function seedWorkspace(
  owner: Pool,
  name = 'ws',
): Promise<{ workspaceId: string; userId: string }> {
  const userId = randomUUID();
  const workspaceId = randomUUID();
  await owner.query(`insert into users (id, email, password_hash) values ($1, $2, 'x')`, [
    userId,
    `${userId}@example.test`,
  ]);
  await owner.query(`insert into workspaces (id, name, created_by) values ($1, $2, $3)`, [
    workspaceId,
    name,
    userId,
  ]);
  await owner.query(`insert into workspace_members (workspace_id, user_id, role) values ($1, $2, 'owner')`, [
    workspaceId,
    userId,
  ]);
  return { workspaceId, userId };
}
