import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { registerUser, type RegisteredUser } from '../support/api-client';
import { startApi, type InProcessApi } from '../support/in-process-api';

const t = useTestDatabase();

/** A draft's imageIds name media of its own workspace: anything else is a 422 that writes nothing. */
describe('product draft images', () => {
  let api: InProcessApi;
  let alice: RegisteredUser;
  let bob: RegisteredUser;

  beforeAll(async () => {
    api = await startApi(t.info);
    alice = await registerUser(api.url);
    bob = await registerUser(api.url);
  });
  afterAll(async () => {
    await api?.close();
  });

  const upload = async (user: RegisteredUser) => {
    const res = await user.client.post<{ id: string }>(
      `/v1/workspaces/${user.workspaceId}/media`,
      { filename: 'a.png', contentType: 'image/png', size: 10 },
      { key: randomUUID() },
    );
    expect(res.status).toBe(201);
    const audited = await t.owner.query(
      `select action, actor_user_id from audit_events where entity_id = $1`,
      [res.body.id],
    );
    expect(audited.rows).toEqual([{ action: 'MEDIA_CREATED', actor_user_id: user.userId }]);
    return res.body.id;
  };
  const drafts = (user: RegisteredUser) => `/v1/workspaces/${user.workspaceId}/product-drafts`;
  const titled = async (title: string) =>
    (await t.owner.query(`select count(*)::int as n from records where payload->>'title' = $1`, [title]))
      .rows[0].n as number;

  it('accepts its own media, refuses unknown, foreign or repeated ids with the offending index', async () => {
    const mine = await upload(alice);
    const theirs = await upload(bob);
    const ok = await alice.client.post<{ id: string; data: { imageIds: string[] } }>(drafts(alice), {
      title: 'with image',
      imageIds: [mine.toUpperCase()],
    });
    expect(ok.status).toBe(201);
    expect(ok.body.data.imageIds).toEqual([mine]);

    for (const [imageIds, path] of [
      [[mine, randomUUID()], 'imageIds.1'],
      [[theirs], 'imageIds.0'],
      [[mine, mine], 'imageIds'],
    ] as const) {
      const title = `refused ${randomUUID()}`;
      const res = await alice.client.post(drafts(alice), { title, imageIds }, { key: randomUUID() });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({
        code: 'VALIDATION_FAILED',
        errors: [expect.objectContaining({ path })],
      });
      expect(await titled(title)).toBe(0);
    }

    // a PATCH is checked the same way
    const patched = await alice.client.request('PATCH', `${drafts(alice)}/${ok.body.id}`, {
      body: { imageIds: [theirs] },
      headers: { 'if-match': '"1"' },
    });
    expect(patched.status).toBe(422);
  });
});
