import { randomUUID } from 'node:crypto';
import { createListingClient, type ListingClient } from '@listing/client';
import { useTestDatabase } from '@listing/testing';
import { waitUntil } from '../outbox/processes';
import { CapabilityStack, credentials } from '../capabilities/stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

/**
 * A client's whole path, driven through the generated typed client (@listing/client) against
 * the real processes (platform-sim, api, dispatcher, worker): register, connect a store, wait for
 * its operation, write a draft and a revision, publish it, replay the publication.
 */
describe('@listing/client: register → store → draft → publication, against the real processes', () => {
  const stack = new CapabilityStack(t);
  let client: ListingClient;
  let workspaceId: string;

  beforeAll(async () => {
    await stack.start();
    const session: { token?: string } = {}; // getToken: the client is made before there is a token
    client = createListingClient({ baseUrl: stack.apiUrl, getToken: () => session.token });
    const { data, error, response } = await client.POST('/v1/auth/register', {
      body: { email: `${randomUUID()}@example.test`, password: `pw-${randomUUID()}`, workspaceName: 'typed' },
    });
    if (!data) throw new Error(`register → ${response.status} ${JSON.stringify(error)}`);
    session.token = data.accessToken;
    workspaceId = data.workspace.id;
  });
  afterAll(() => stack.stop());

  const operationDone = (operationId: string) =>
    waitUntil(
      `operation ${operationId} to succeed`,
      async () => {
        const { data, error } = await client.GET('/v1/workspaces/{workspaceId}/operations/{operationId}', {
          params: { path: { workspaceId, operationId } },
        });
        if (!data) throw new Error(`GET operation: ${JSON.stringify(error)}`);
        if (data.status === 'failed') throw new Error(`operation failed: ${JSON.stringify(data.error)}`);
        return data.status === 'succeeded' ? data : undefined;
      },
      30_000,
      100,
    );

  it('every step through the typed client; the publication’s replay answers its first body', async () => {
    const storeExternalId = `shop-${randomUUID()}`;
    const connected = await client.idempotent('post', '/v1/workspaces/{workspaceId}/stores', {
      params: { path: { workspaceId } },
      body: { platform: 'sim', storeExternalId, ...credentials('typed') },
    });
    expect(connected).toMatchObject({ status: 202, attempts: 1, replayed: false });
    if (!connected.data) throw new Error(JSON.stringify(connected.error));
    expect(connected.data.store.status).toBe('pending_verification');
    expect(connected.response.headers.get('location')).toBe(
      `/v1/workspaces/${workspaceId}/operations/${connected.data.operation.id}`,
    );
    await operationDone(connected.data.operation.id);
    const store = await client.GET('/v1/workspaces/{workspaceId}/stores/{storeId}', {
      params: { path: { workspaceId, storeId: connected.data.store.id } },
    });
    expect(store.data?.status).toBe('active');

    const created = await client.idempotent('post', '/v1/workspaces/{workspaceId}/product-drafts', {
      params: { path: { workspaceId } },
      body: { title: 'Blue mug', price: { amount: '19.99', currency: 'EUR' } },
    });
    if (!created.data) throw new Error(JSON.stringify(created.error));
    expect(created).toMatchObject({ status: 201, data: { revision: 1, data: { title: 'Blue mug' } } });
    expect(created.response.headers.get('etag')).toBe('"1"');
    const draftId = created.data.id;

    const stale = await client.idempotent('patch', '/v1/workspaces/{workspaceId}/product-drafts/{draftId}', {
      params: { path: { workspaceId, draftId }, header: { 'If-Match': '"7"' } },
      body: { title: 'Large blue mug' },
    });
    expect(stale).toMatchObject({ status: 412, attempts: 1, error: { code: 'REVISION_MISMATCH' } });
    const edited = await client.idempotent('patch', '/v1/workspaces/{workspaceId}/product-drafts/{draftId}', {
      params: { path: { workspaceId, draftId }, header: { 'If-Match': '"1"' } },
      body: { title: 'Large blue mug' },
    });
    expect(edited).toMatchObject({ status: 200, data: { revision: 2, data: { title: 'Large blue mug' } } });

    const publish = (key?: string) =>
      client.idempotent(
        'post',
        '/v1/workspaces/{workspaceId}/publications',
        {
          params: { path: { workspaceId } },
          body: { draftId, revision: 2, storeId: connected.data!.store.id },
        },
        { key },
      );
    const published = await publish();
    if (!published.data) throw new Error(JSON.stringify(published.error));
    expect(published).toMatchObject({
      status: 202,
      replayed: false,
      data: { publication: { status: 'pending' } },
    });
    await operationDone(published.data.operation.id);
    const publication = await client.GET('/v1/workspaces/{workspaceId}/publications/{publicationId}', {
      params: { path: { workspaceId, publicationId: published.data.publication.id } },
    });
    expect(publication.data).toMatchObject({ status: 'published', revision: 2, draftId });
    expect(publication.data?.platformProductId).toBeTruthy();
    expect(await stack.admin.countersFor(`publication-${published.data.publication.id}`)).toMatchObject({
      productCreateCalls: 1,
    });

    const replay = await publish(published.key);
    expect(replay).toMatchObject({ status: 202, replayed: true, attempts: 1, key: published.key });
    expect(replay.data).toEqual(published.data); // the first body, `pending` as first sent
    const again = await publish(); // another key, same draft and store
    expect(again).toMatchObject({ status: 409, attempts: 1, error: { code: 'ALREADY_PUBLISHED' } });

    const list = await client.GET('/v1/workspaces/{workspaceId}/publications', {
      params: { path: { workspaceId }, query: { limit: 10 } },
    });
    expect(list.data?.items.map((p) => p.id)).toEqual([published.data.publication.id]);
  });
});
