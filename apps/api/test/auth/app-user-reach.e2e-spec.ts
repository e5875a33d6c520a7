import { createHash } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { Client } from 'pg';
import { registerUser, type RegisteredUser } from '../support/api-client';
import { startApi, type InProcessApi } from '../support/in-process-api';

const t = useTestDatabase();

/**
 * Defence in depth (sql/024): a connection as app_user, the API's role, the one a SQL injection
 * would run as. It can neither read the account tables nor ask for another user's workspaces.
 */
describe('what app_user reaches without a workspace', () => {
  let api: InProcessApi;
  let alice: RegisteredUser;
  let bob: RegisteredUser;
  let app: Client;
  const hashOf = (token: string) => createHash('sha256').update(token).digest();

  beforeAll(async () => {
    api = await startApi(t.info);
    alice = await registerUser(api.url, 'Alice Co');
    bob = await registerUser(api.url, 'Bob Secret Co');
    app = new Client({ connectionString: t.info.appUrl });
    await app.connect();
  });
  afterAll(async () => {
    await app?.end();
    await api?.close();
  });

  const refused = (text: string, values: unknown[] = []) =>
    app.query(text, values).then(
      () => 'allowed',
      (error: { code?: string }) => error.code,
    );

  it('cannot select the tables that have no tenant: users, sessions, tokens', async () => {
    for (const table of ['users', 'auth_sessions', 'auth_access_tokens', 'auth_refresh_tokens']) {
      expect({ table, answer: await refused(`select * from ${table} limit 1`) }).toEqual({
        table,
        answer: '42501', // insufficient_privilege
      });
    }
    // Nor ask for a role by user id, or insert a token for someone.
    expect(await refused('select app_member_role($1, $2)', [bob.userId, bob.workspaceId])).toBe('42501');
    expect(
      await refused(`insert into auth_access_tokens values ('\\x00', $1, $2, now(), now())`, [
        bob.userId,
        bob.userId,
      ]),
    ).toBe('42501');
  });

  it("lists a user's workspaces only for that user's live token, never by user id", async () => {
    // The old signature took any user id: it is gone.
    expect(await refused('select * from app_user_workspaces($1::uuid)', [bob.userId])).toBe('42883');
    const forToken = async (hash: Buffer) =>
      (await app.query('select workspace_id, name from app_user_workspaces($1)', [hash])).rows;
    expect(await forToken(hashOf(alice.accessToken))).toEqual([
      { workspace_id: alice.workspaceId, name: 'Alice Co' },
    ]);
    expect(await forToken(Buffer.alloc(32))).toEqual([]);
    expect(await forToken(hashOf(bob.refreshToken))).toEqual([]); // not an access token
    // A revoked session's token names nobody any more.
    expect((await bob.client.post('/v1/auth/logout')).status).toBe(204);
    expect(await forToken(hashOf(bob.accessToken))).toEqual([]);
    // Invitations likewise answer for a live token only.
    expect(await refused('select * from app_user_invitations($1::uuid)', [alice.userId])).toBe('42883');
    expect((await app.query('select * from app_user_invitations($1)', [Buffer.alloc(32)])).rows).toEqual([]);
  });

  it("reads members' emails only inside the bound workspace", async () => {
    const email = (workspace: string | null) =>
      app
        .query(
          `select set_config('app.workspace_id', coalesce($1, ''), false), app_member_email($2) as email`,
          [workspace, alice.userId],
        )
        .then((r) => r.rows[0].email as string | null);
    expect(await email(alice.workspaceId)).toBe(alice.email.toLowerCase());
    expect(await email(bob.workspaceId)).toBeNull(); // alice is no member there
    expect(await email(null)).toBeNull();
  });
});
