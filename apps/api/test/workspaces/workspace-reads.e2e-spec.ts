import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { ApiClient, registerUser, type RegisteredUser } from '../support/api-client';
import { startApi, type InProcessApi } from '../support/in-process-api';

const t = useTestDatabase();

interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
interface Member {
  userId: string;
  email: string;
  role: string;
  joinedAt: string;
}
interface Invitation {
  id: string;
  email: string;
  role: string;
  createdAt: string;
  expiresAt: string;
}
interface Revision {
  id: string;
  revision: number;
  data: Record<string, unknown>;
  revisionCreatedAt: string;
}
interface AuditEvent {
  id: string;
  action: string;
  resourceType: string;
  resourceId: string | null;
  revision: number | null;
  actor: string;
  actorUserId: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
}

/**
 * Every page of a list, `limit` at a time, following nextCursor: the pages hold `limit` items
 * each (the last one fewer or as many), and their concatenation is the whole list.
 */
async function allPages<T>(client: ApiClient, path: string, limit: number): Promise<T[][]> {
  const pages: T[][] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const url: string = `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res: { status: number; body: Page<T> } = await client.get<Page<T>>(url);
    expect({ url, status: res.status }).toEqual({ url, status: 200 });
    pages.push(res.body.items);
    cursor = res.body.nextCursor;
    if (cursor) expect(res.body.items).toHaveLength(limit);
    if (pages.length > 50) throw new Error('paging does not end');
  } while (cursor);
  return pages;
}

/** Newest first on (a time to the millisecond, then a key), as the lists order. */
function newestFirst<T>(items: T[], at: (i: T) => string, key: (i: T) => string | number): boolean {
  return items.every((item, i) => {
    if (i === 0) return true;
    const prev = items[i - 1]!;
    const [a, b] = [Date.parse(at(prev)), Date.parse(at(item))];
    return a > b || (a === b && key(prev) > key(item));
  });
}

/** The first batch's reads: a workspace, its members, invitations, a draft's revisions, its audit log. */
describe('workspace reads over HTTP', () => {
  let api: InProcessApi;
  let owner: RegisteredUser;
  let admin: RegisteredUser;
  let member: RegisteredUser;
  let stranger: RegisteredUser;
  const ws = (path = '') => `/v1/workspaces/${owner.workspaceId}${path}`;

  /** Invites `user` with `role` and has them accept: a member of the owner's workspace. */
  async function join(user: RegisteredUser, role: 'admin' | 'member'): Promise<void> {
    const inv = await owner.client.post<{ id: string }>(ws('/members'), {
      email: user.email,
      role,
    });
    expect(inv.status).toBe(201);
    expect((await user.client.post(`/v1/invitations/${inv.body.id}/accept`)).status).toBe(200);
  }

  beforeAll(async () => {
    api = await startApi(t.info);
    owner = await registerUser(api.url, 'Reads');
    [admin, member, stranger] = await Promise.all([
      registerUser(api.url),
      registerUser(api.url),
      registerUser(api.url),
    ]);
    await join(admin, 'admin');
    await join(member, 'member');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('GET /v1/workspaces/{id}: the workspace with the caller’s role, bare; a non-member gets 404', async () => {
    const asOwner = await owner.client.get(ws());
    expect(asOwner.status).toBe(200);
    expect(asOwner.body).toEqual({
      id: owner.workspaceId,
      name: 'Reads',
      role: 'owner',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect((await member.client.get(ws())).body).toEqual({ ...asOwner.body, role: 'member' });
    expect((await admin.client.get(ws())).body).toMatchObject({ role: 'admin' });
    for (const path of [ws(), `/v1/workspaces/${randomUUID()}`, '/v1/workspaces/not-a-uuid']) {
      const res = await stranger.client.get(path);
      expect({ path, status: res.status, code: (res.body as { code?: string }).code }).toEqual({
        path,
        status: 404,
        code: 'WORKSPACE_NOT_FOUND',
      });
    }
    expect((await new ApiClient(api.url).get(ws())).status).toBe(401);
  });

  it('GET …/members: every member with their role, newest first, in pages that do not overlap', async () => {
    const list = await member.client.get<Page<Member>>(ws('/members'));
    expect(list.status).toBe(200);
    expect(list.body.nextCursor).toBeNull();
    expect(list.body.items).toHaveLength(3);
    expect(
      newestFirst(
        list.body.items,
        (m) => m.joinedAt,
        (m) => m.userId,
      ),
    ).toBe(true);
    expect([...list.body.items].sort((a, b) => a.userId.localeCompare(b.userId))).toEqual(
      [
        { userId: owner.userId, email: owner.email, role: 'owner', joinedAt: expect.any(String) },
        { userId: admin.userId, email: admin.email, role: 'admin', joinedAt: expect.any(String) },
        { userId: member.userId, email: member.email, role: 'member', joinedAt: expect.any(String) },
      ].sort((a, b) => a.userId.localeCompare(b.userId)),
    );

    const pages = await allPages<Member>(member.client, ws('/members'), 2);
    expect(pages.map((p) => p.length)).toEqual([2, 1]);
    expect(pages.flat()).toEqual(list.body.items);
    expect(
      newestFirst(
        pages.flat(),
        (m) => m.joinedAt,
        (m) => m.userId,
      ),
    ).toBe(true);

    // A new member joins meanwhile: the second page, by its cursor, is the same.
    const first = await member.client.get<Page<Member>>(ws('/members?limit=2'));
    await join(await registerUser(api.url), 'member');
    const second = await member.client.get<Page<Member>>(
      ws(`/members?limit=2&cursor=${first.body.nextCursor}`),
    );
    expect(second.body.items).toEqual(pages[1]);

    expect((await stranger.client.get(ws('/members'))).status).toBe(404);
    const bad = await member.client.get(ws('/members?cursor=nonsense'));
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('GET …/invitations: the pending ones with their ids, for owners and admins; 403 for a member', async () => {
    const emails = Array.from({ length: 3 }, (_, i) => `pending-${i}-${randomUUID()}@example.test`);
    const sent: Invitation[] = [];
    for (const email of emails) {
      const res = await owner.client.post<Invitation>(ws('/members'), { email });
      sent.push(res.body);
    }
    // Not pending: an expired one, an accepted one (the member's), a withdrawn one.
    const expired = await owner.client.post<Invitation>(ws('/members'), {
      email: `expired-${randomUUID()}@example.test`,
    });
    await t.owner.query(
      `update workspace_invitations set expires_at = now() - interval '1 second' where id = $1`,
      [expired.body.id],
    );
    const withdrawn = await owner.client.post<Invitation>(ws('/members'), {
      email: `withdrawn-${randomUUID()}@example.test`,
    });
    expect((await owner.client.request('DELETE', ws(`/invitations/${withdrawn.body.id}`))).status).toBe(204);

    const list = await admin.client.get<Page<Invitation>>(ws('/invitations'));
    expect(list.status).toBe(200);
    const key = (i: Invitation) => `${i.createdAt} ${i.id}`;
    expect(list.body.items).toEqual([...sent].sort((a, b) => key(b).localeCompare(key(a))));
    expect(list.body.nextCursor).toBeNull();

    const pages = await allPages<Invitation>(owner.client, ws('/invitations'), 2);
    expect(pages.map((p) => p.length)).toEqual([2, 1]);
    expect(pages.flat()).toEqual(list.body.items);
    expect(new Set(pages.flat().map((i) => i.id)).size).toBe(3);
    expect(
      newestFirst(
        pages.flat(),
        (i) => i.createdAt,
        (i) => i.id,
      ),
    ).toBe(true);

    // The id is the one DELETE takes: withdrawn, it is no longer pending.
    const gone = list.body.items[0]!;
    expect((await owner.client.request('DELETE', ws(`/invitations/${gone.id}`))).status).toBe(204);
    expect(
      (await owner.client.get<Page<Invitation>>(ws('/invitations'))).body.items.map((i) => i.id),
    ).toEqual(list.body.items.slice(1).map((i) => i.id));

    const forbidden = await member.client.get(ws('/invitations'));
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ code: 'FORBIDDEN' });
    const stranger404 = await stranger.client.get(ws('/invitations'));
    expect(stranger404.status).toBe(404);
    expect(stranger404.body).toMatchObject({ code: 'WORKSPACE_NOT_FOUND' });
  });

  it('GET …/product-drafts/{id}/revisions: every revision newest first, in pages by a cursor', async () => {
    const drafts = ws('/product-drafts');
    const created = await member.client.post<Revision>(drafts, { title: 'r1' });
    const id = created.body.id;
    for (const [revision, title] of [
      [1, 'r2'],
      [2, 'r3'],
      [3, 'r4'],
    ] as const) {
      const res = await member.client.request('PATCH', `${drafts}/${id}`, {
        body: { title },
        headers: { 'if-match': `"${revision}"` },
      });
      expect(res.status).toBe(200);
    }
    const pages = await allPages<Revision>(member.client, `${drafts}/${id}/revisions`, 3);
    expect(pages.map((p) => p.map((r) => r.revision))).toEqual([[4, 3, 2], [1]]);
    expect(pages.flat().map((r) => r.data.title)).toEqual(['r4', 'r3', 'r2', 'r1']);
    // Each item is the revision as GET …/revisions/{n} answers it.
    for (const item of pages.flat()) {
      expect(item).toEqual((await owner.client.get(`${drafts}/${id}/revisions/${item.revision}`)).body);
    }
    const two = await allPages<Revision>(member.client, `${drafts}/${id}/revisions`, 2);
    expect(two.map((p) => p.map((r) => r.revision))).toEqual([
      [4, 3],
      [2, 1],
    ]);
    // A new revision meanwhile does not shift the next page.
    const first = await member.client.get<Page<Revision>>(`${drafts}/${id}/revisions?limit=2`);
    await member.client.request('PATCH', `${drafts}/${id}`, {
      body: { title: 'r5' },
      headers: { 'if-match': '"4"' },
    });
    const next = await member.client.get<Page<Revision>>(
      `${drafts}/${id}/revisions?limit=2&cursor=${first.body.nextCursor}`,
    );
    expect(next.body.items.map((r) => r.revision)).toEqual([2, 1]);
    expect(next.body.nextCursor).toBeNull();

    for (const path of [`${drafts}/${randomUUID()}/revisions`, `${drafts}/not-a-uuid/revisions`]) {
      const res = await member.client.get(path);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'RESOURCE_NOT_FOUND' });
    }
    const stranger404 = await stranger.client.get(`${drafts}/${id}/revisions`);
    expect(stranger404.status).toBe(404);
    expect(stranger404.body).toMatchObject({ code: 'WORKSPACE_NOT_FOUND' });
    // Another workspace's draft is no draft here.
    const elsewhere = await stranger.client.post<Revision>(
      `/v1/workspaces/${stranger.workspaceId}/product-drafts`,
      { title: 'theirs' },
    );
    expect((await member.client.get(`${drafts}/${elsewhere.body.id}/revisions`)).status).toBe(404);
    const crafted = Buffer.from(JSON.stringify({ r: 0 })).toString('base64url');
    for (const cursor of ['nonsense', crafted]) {
      expect((await member.client.get(`${drafts}/${id}/revisions?cursor=${cursor}`)).status).toBe(422);
    }
  });

  it('GET …/audit-events: the log newest first with metadata, in pages; filtered by a resource pair', async () => {
    const drafts = ws('/product-drafts');
    const created = await owner.client.post<Revision>(drafts, { title: 'audited' });
    const id = created.body.id;
    for (const revision of [1, 2]) {
      await owner.client.request('PATCH', `${drafts}/${id}`, {
        body: { title: `audited ${revision}` },
        headers: { 'if-match': `"${revision}"` },
      });
    }
    const audit = `/audit-events?resourceType=product_draft&resourceId=${id.toUpperCase()}`;
    const ofDraft = await member.client.get<Page<AuditEvent>>(ws(audit));
    expect(ofDraft.status).toBe(200);
    expect(ofDraft.body.items.map((e) => [e.action, e.revision])).toEqual([
      ['RECORD_UPDATED', 3],
      ['RECORD_UPDATED', 2],
      ['RECORD_CREATED', 1],
    ]);
    expect(ofDraft.body.items[2]).toEqual({
      id: expect.any(String),
      action: 'RECORD_CREATED',
      resourceType: 'product_draft',
      resourceId: id,
      revision: 1,
      actor: 'user',
      actorUserId: owner.userId,
      metadata: {},
      createdAt: expect.any(String),
    });
    const draftPages = await allPages<AuditEvent>(member.client, ws(audit), 2);
    expect(draftPages.map((p) => p.length)).toEqual([2, 1]);
    expect(draftPages.flat()).toEqual(ofDraft.body.items);

    // The whole log: every entry of the workspace once, newest first, metadata included.
    const { rows } = await t.owner.query<{ id: string }>(
      `select id from audit_events where workspace_id = $1`,
      [owner.workspaceId],
    );
    expect(rows.length).toBeGreaterThan(10);
    const pages = await allPages<AuditEvent>(member.client, ws('/audit-events'), 4);
    const all = pages.flat();
    expect(all.map((e) => e.id).sort()).toEqual(rows.map((r) => r.id).sort());
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
    expect(
      newestFirst(
        all,
        (e) => e.createdAt,
        (e) => e.id,
      ),
    ).toBe(true);
    expect(all.find((e) => e.action === 'MEMBER_INVITED')).toMatchObject({
      resourceType: 'workspace_invitation',
      metadata: { role: expect.stringMatching(/^(admin|member)$/) },
    });
    expect(all.at(-1)).toMatchObject({
      action: 'WORKSPACE_CREATED',
      resourceType: 'workspace',
      resourceId: owner.workspaceId,
      actorUserId: owner.userId,
    });

    // An operator's retry keeps its ids and codes; the operator's user@host is not the tenant's.
    await t.owner.query(
      `insert into audit_events (workspace_id, id, actor, action, entity_type, entity_id, metadata)
       values ($1, gen_random_uuid(), 'operator', 'OUTBOX_EVENT_RETRIED', 'outbox_event', $2, $3)`,
      [
        owner.workspaceId,
        randomUUID(),
        JSON.stringify({
          operator: 'root@ops-host-7',
          queue: 'media',
          type: 'media.process',
          previousAttempts: 10,
        }),
      ],
    );
    const latest = (await member.client.get<Page<AuditEvent>>(ws('/audit-events?limit=1'))).body.items[0];
    expect(latest).toMatchObject({
      action: 'OUTBOX_EVENT_RETRIED',
      actor: 'operator',
      actorUserId: null,
      metadata: { queue: 'media', type: 'media.process', previousAttempts: 10 },
    });
    expect(latest!.metadata).not.toHaveProperty('operator');

    // Half a filter, or a resource id that is not a UUID, is a 422; a stranger gets 404.
    for (const query of [
      '?resourceType=product_draft',
      `?resourceId=${id}`,
      '?resourceType=x&resourceId=1',
    ]) {
      const res = await member.client.get(ws(`/audit-events${query}`));
      expect({ query, status: res.status }).toEqual({ query, status: 422 });
    }
    expect((await member.client.get(ws('/audit-events?cursor=nonsense'))).status).toBe(422);
    const stranger404 = await stranger.client.get(ws('/audit-events'));
    expect(stranger404.status).toBe(404);
    expect(stranger404.body).toMatchObject({ code: 'WORKSPACE_NOT_FOUND' });
    // The stranger's own log holds nothing of this workspace.
    const theirs = await stranger.client.get<Page<AuditEvent>>(
      `/v1/workspaces/${stranger.workspaceId}/audit-events`,
    );
    expect(theirs.body.items.length).toBeGreaterThan(0);
    expect(theirs.body.items.filter((e) => rows.some((r) => r.id === e.id))).toEqual([]);
  });

  it('the OpenAPI document lists each of these reads', async () => {
    const res = await fetch(`${api.url}/docs/openapi.json`);
    const doc = (await res.json()) as {
      paths: Record<string, Record<string, { summary?: string; responses: Record<string, unknown> }>>;
    };
    for (const path of [
      '/v1/workspaces/{workspaceId}',
      '/v1/workspaces/{workspaceId}/members',
      '/v1/workspaces/{workspaceId}/invitations',
      '/v1/workspaces/{workspaceId}/product-drafts/{draftId}/revisions',
      '/v1/workspaces/{workspaceId}/audit-events',
    ]) {
      expect({ path, summary: doc.paths[path]?.get?.summary }).toEqual({ path, summary: expect.any(String) });
      expect(doc.paths[path]!.get!.responses['404']).toBeDefined();
    }
    expect(
      JSON.stringify(doc.paths['/v1/workspaces/{workspaceId}/invitations']!.get!.responses['403']),
    ).toContain('FORBIDDEN');
  });
});
