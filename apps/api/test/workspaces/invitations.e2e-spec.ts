import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { registerUser, type RegisteredUser } from '../support/api-client';
import { startApi, type InProcessApi } from '../support/in-process-api';

const t = useTestDatabase();

interface InvitationBody {
  id: string;
  email: string;
  role: string;
  createdAt: string;
  expiresAt: string;
}
interface Received {
  items: Array<{ id: string; workspace: { id: string; name: string }; role: string }>;
}

/** Members join by invitation: nothing about other accounts leaks, nobody is added unasked. */
describe('workspace invitations over HTTP', () => {
  let api: InProcessApi;
  let owner: RegisteredUser;
  const members = () => `/v1/workspaces/${owner.workspaceId}/members`;
  const memberships = async (user: RegisteredUser) =>
    (await user.client.get<{ items: Array<{ id: string; role: string }> }>('/v1/workspaces')).body.items;

  beforeAll(async () => {
    api = await startApi(t.info);
    owner = await registerUser(api.url);
  });
  afterAll(async () => {
    await api?.close();
  });

  it('inviting a registered and an unregistered email answers alike, and adds nobody', async () => {
    const bob = await registerUser(api.url);
    const nobody = `nobody-${randomUUID()}@example.test`;
    const forBob = await owner.client.post<InvitationBody>(members(), { email: bob.email.toUpperCase() });
    const forNobody = await owner.client.post<InvitationBody>(members(), { email: nobody });
    expect(forBob.status).toBe(201);
    expect(forNobody.status).toBe(201);
    const shape = (b: InvitationBody) => Object.keys(b).sort();
    expect(shape(forBob.body)).toEqual(shape(forNobody.body));
    expect(forBob.body).toMatchObject({ email: bob.email.toLowerCase(), role: 'member' });
    expect(forBob.text).not.toContain(bob.userId);
    expect(await memberships(bob)).toHaveLength(1); // their own workspace only
    expect((await bob.client.get(`/v1/workspaces/${owner.workspaceId}/product-drafts`)).status).toBe(404);
  });

  it('the invitee sees it, accepts it once, and is then a member with its role', async () => {
    const carol = await registerUser(api.url);
    const first = await owner.client.post<InvitationBody>(members(), { email: carol.email });
    // inviting again keeps the invitation and takes the latest role
    const again = await owner.client.post<InvitationBody>(members(), { email: carol.email, role: 'admin' });
    expect(again.body).toMatchObject({ id: first.body.id, role: 'admin' });
    const received = await carol.client.get<Received>('/v1/invitations');
    expect(received.body.items).toEqual([
      expect.objectContaining({
        id: first.body.id,
        role: 'admin',
        workspace: { id: owner.workspaceId, name: expect.any(String) },
      }),
    ]);
    // nobody else can answer it
    const mallory = await registerUser(api.url);
    expect((await mallory.client.get<Received>('/v1/invitations')).body.items).toEqual([]);
    const stolen = await mallory.client.post(`/v1/invitations/${first.body.id}/accept`);
    expect(stolen.status).toBe(404);
    expect(stolen.body).toMatchObject({ code: 'INVITATION_NOT_FOUND' });

    const accepted = await carol.client.post(`/v1/invitations/${first.body.id}/accept`);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ id: owner.workspaceId, role: 'admin' });
    expect(await memberships(carol)).toContainEqual(
      expect.objectContaining({ id: owner.workspaceId, role: 'admin' }),
    );
    expect((await carol.client.get(`/v1/workspaces/${owner.workspaceId}/product-drafts`)).status).toBe(200);
    // accepting again (a retry after a lost answer) answers the same membership
    const twice = await carol.client.post(`/v1/invitations/${first.body.id}/accept`);
    expect(twice.status).toBe(200);
    expect(twice.body).toEqual(accepted.body);
    expect((await carol.client.get<Received>('/v1/invitations')).body.items).toEqual([]);
    // a member is not invited again
    const member = await owner.client.post(members(), { email: carol.email });
    expect(member.status).toBe(409);
    expect(member.body).toMatchObject({ code: 'MEMBER_EXISTS', role: 'admin' });
  });

  it('concurrent accepts make one membership and all answer it; a declined invitation cannot be accepted', async () => {
    const dave = await registerUser(api.url);
    const inv = await owner.client.post<InvitationBody>(members(), { email: dave.email });
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => dave.client.post(`/v1/invitations/${inv.body.id}/accept`)),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    const { rows } = await t.owner.query(
      `select count(*)::int as n from workspace_members where workspace_id = $1 and user_id = $2`,
      [owner.workspaceId, dave.userId],
    );
    expect(rows[0].n).toBe(1);

    const erin = await registerUser(api.url);
    const declined = await owner.client.post<InvitationBody>(members(), { email: erin.email });
    expect((await erin.client.post(`/v1/invitations/${declined.body.id}/decline`)).status).toBe(204);
    expect((await erin.client.post(`/v1/invitations/${declined.body.id}/accept`)).status).toBe(404);
    expect(await memberships(erin)).toHaveLength(1);
  });

  it('an expired invitation is gone for the invitee; inviting again renews it', async () => {
    const frank = await registerUser(api.url);
    const inv = await owner.client.post<InvitationBody>(members(), { email: frank.email });
    await t.owner.query(
      `update workspace_invitations set expires_at = now() - interval '1 second' where id = $1`,
      [inv.body.id],
    );
    expect((await frank.client.get<Received>('/v1/invitations')).body.items).toEqual([]);
    expect((await frank.client.post(`/v1/invitations/${inv.body.id}/accept`)).status).toBe(404);
    const renewed = await owner.client.post<InvitationBody>(members(), { email: frank.email });
    expect(renewed.body.id).toBe(inv.body.id);
    expect(new Date(renewed.body.expiresAt).getTime()).toBeGreaterThan(Date.now() + 6 * 86_400_000);
    expect((await frank.client.post(`/v1/invitations/${inv.body.id}/accept`)).status).toBe(200);
  });

  it('an invitation sent before an account existed is not taken by whoever registers the email later', async () => {
    const email = `late-${randomUUID()}@example.test`;
    const inv = await owner.client.post<InvitationBody>(members(), { email, role: 'admin' });
    const registrant = await registerUser(api.url, 'ws', email);
    expect((await registrant.client.get<Received>('/v1/invitations')).body.items).toEqual([]);
    const taken = await registrant.client.post(`/v1/invitations/${inv.body.id}/accept`);
    expect(taken.status).toBe(404);
    expect(await memberships(registrant)).toHaveLength(1);
    // sent again once the account exists, it reaches it
    await owner.client.post<InvitationBody>(members(), { email, role: 'admin' });
    expect((await registrant.client.get<Received>('/v1/invitations')).body.items).toHaveLength(1);
  });

  it('an owner withdraws an open invitation; the invitee can no longer accept it', async () => {
    const hank = await registerUser(api.url);
    const inv = await owner.client.post<InvitationBody>(members(), { email: hank.email });
    const url = `/v1/workspaces/${owner.workspaceId}/invitations/${inv.body.id}`;
    expect((await owner.client.request('DELETE', url)).status).toBe(204);
    expect((await hank.client.get<Received>('/v1/invitations')).body.items).toEqual([]);
    expect((await hank.client.post(`/v1/invitations/${inv.body.id}/accept`)).status).toBe(404);
    const again = await owner.client.request('DELETE', url);
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ code: 'INVITATION_NOT_FOUND' });
    // an id that is not even a UUID is the same 404
    for (const res of [
      await owner.client.request('DELETE', `/v1/workspaces/${owner.workspaceId}/invitations/xyz`),
      await hank.client.post('/v1/invitations/xyz/accept'),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'INVITATION_NOT_FOUND' });
    }
    // another workspace's owner cannot withdraw it either (their workspace has no such invitation)
    const other = await registerUser(api.url);
    const inv2 = await owner.client.post<InvitationBody>(members(), { email: hank.email });
    const foreign = await other.client.request(
      'DELETE',
      `/v1/workspaces/${other.workspaceId}/invitations/${inv2.body.id}`,
    );
    expect(foreign.status).toBe(404);
    expect((await hank.client.get<Received>('/v1/invitations')).body.items).toHaveLength(1);
  });

  it('workspace and invitation changes are audited with ids and roles, never the email', async () => {
    const ivy = await registerUser(api.url);
    const inv = await owner.client.post<InvitationBody>(members(), { email: ivy.email, role: 'admin' });
    await ivy.client.post(`/v1/invitations/${inv.body.id}/accept`);
    const { rows } = await t.owner.query(
      `select action, actor_user_id, metadata from audit_events
        where (entity_id = $1 and entity_type = 'workspace_invitation') or (entity_id = $2 and action = 'WORKSPACE_CREATED')
        order by created_at, action`,
      [inv.body.id, ivy.workspaceId],
    );
    expect(rows).toEqual([
      { action: 'WORKSPACE_CREATED', actor_user_id: ivy.userId, metadata: {} },
      { action: 'MEMBER_INVITED', actor_user_id: owner.userId, metadata: { role: 'admin' } },
      { action: 'INVITATION_ACCEPTED', actor_user_id: ivy.userId, metadata: { role: 'admin', joined: true } },
    ]);
    expect(JSON.stringify(rows)).not.toContain(ivy.email);
  });

  it('creating a workspace honours an Idempotency-Key: a retry answers the first workspace, never a second one', async () => {
    const uma = await registerUser(api.url);
    const key = randomUUID();
    const name = `Retry ${randomUUID()}`;
    const first = await uma.client.post<{ id: string; name: string; role: string }>(
      '/v1/workspaces',
      { name },
      { key },
    );
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await Promise.all(
      Array.from({ length: 3 }, () => uma.client.post('/v1/workspaces', { name }, { key })),
    );
    for (const r of again) {
      expect(r.status).toBe(201);
      expect(r.headers.get('idempotent-replayed')).toBe('true');
      expect(r.text).toBe(first.text);
    }
    const count = async () =>
      (await t.owner.query(`select count(*)::int as n from workspaces where name = $1`, [name])).rows[0].n;
    expect(await count()).toBe(1);
    // the same key with another name is refused; another user's same key is their own
    const other = await uma.client.post('/v1/workspaces', { name: 'something else' }, { key });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    const vic = await registerUser(api.url);
    const theirs = await vic.client.post<{ id: string }>('/v1/workspaces', { name }, { key });
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(first.body.id);
    // without a key every request creates; a malformed key is a 400 (after validation)
    expect((await uma.client.post('/v1/workspaces', { name: 'k' }, { key: 'nope' })).status).toBe(400);
    expect((await uma.client.post('/v1/workspaces', { name: '' }, { key: 'nope' })).status).toBe(422);
    expect(await count()).toBe(2);
    expect((await memberships(uma)).filter((w) => w.id === first.body.id)).toEqual([
      { id: first.body.id, name, role: 'owner' },
    ]);
  });

  it('a plain member cannot invite', async () => {
    const gina = await registerUser(api.url);
    const inv = await owner.client.post<InvitationBody>(members(), { email: gina.email, role: 'member' });
    await gina.client.post(`/v1/invitations/${inv.body.id}/accept`);
    const res = await gina.client.post<InvitationBody>(members(), {
      email: `x-${randomUUID()}@example.test`,
    });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'FORBIDDEN' });
    const open = await owner.client.post<InvitationBody>(members(), {
      email: `y-${randomUUID()}@example.test`,
    });
    const withdraw = await gina.client.request(
      'DELETE',
      `/v1/workspaces/${owner.workspaceId}/invitations/${open.body.id}`,
    );
    expect(withdraw.status).toBe(403);
  });
});
