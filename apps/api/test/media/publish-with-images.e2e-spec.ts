import { createHash, randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { SimAdminClient, type SimProduct } from '@listing/platform-sim';
import { waitUntil } from '../outbox/processes';
import { MediaStack, type OperationBody } from './media-stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

interface Media {
  id: string;
  status: string;
  checksumSha256: string | null;
}
/** Publish carries the revision's content: its fields, its attributes and its ready images. */
describe('publishing a draft with images and attributes (real processes)', () => {
  const stack = new MediaStack(t);
  let admin: SimAdminClient;
  let store: { id: string; storeExternalId: string };
  const apiKey = `valid-${randomUUID()}`;

  beforeAll(async () => {
    await stack.start();
    admin = new SimAdminClient(stack.sim.url);
    store = await stack.connectSimStore(apiKey);
  });
  afterAll(() => stack.stop());

  async function readyImage(name: string, contentType: string): Promise<Media & { bytes: Buffer }> {
    const bytes = await stack.simBytes(name);
    const created = await stack.client.post<Media>(
      stack.ws('/media'),
      { filename: name, contentType, size: bytes.length },
      { key: randomUUID() },
    );
    const put = await fetch(stack.apiUrl + stack.ws(`/media/${created.body.id}/content`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${stack.user.accessToken}`, 'content-type': contentType },
      body: bytes,
    });
    expect(put.status).toBe(200);
    const accepted = await stack.client.post<{ operation: OperationBody }>(
      stack.ws(`/media/${created.body.id}/complete`),
      undefined,
      { key: randomUUID() },
    );
    await stack.waitForOperation(accepted.body.operation.id);
    const media = await stack.client.get<Media>(stack.ws(`/media/${created.body.id}`));
    expect(media.body.status).toBe('ready');
    return { ...media.body, bytes };
  }

  const simGet = (path: string) => stack.simStoreGet(store, apiKey, path);

  it('sends title, description, price, category, attributes and the ready images, each uploaded once', async () => {
    const png = await readyImage('product-300x200.png', 'image/png');
    const jpeg = await readyImage('x-32x32.jpg', 'image/jpeg');
    const data = {
      title: 'Blue mug',
      description: 'A mug, blue',
      price: { amount: '12.50', currency: 'EUR' },
      categoryId: 'kitchen.mugs',
      attributes: { color: 'blue', material: 'stoneware' },
      imageIds: [jpeg.id, png.id],
    };
    const draft = await stack.client.post<{ id: string; revision: number }>(
      stack.ws('/product-drafts'),
      data,
      {
        key: randomUUID(),
      },
    );
    expect(draft.status).toBe(201);

    // The product create's answer is lost once: the retry sends the images again with their keys.
    await admin.setFaults({ dropResponseRate: 1, routes: ['POST /platform/v1/stores/*/products'] });
    const published = await stack.client.post<{ publication: { id: string }; operation: OperationBody }>(
      stack.ws('/publications'),
      { draftId: draft.body.id, revision: draft.body.revision, storeId: store.id },
      { key: randomUUID() },
    );
    expect(published.status).toBe(202);
    await waitUntil(
      'the create to reach the marketplace',
      async () => (await admin.counters()).productsCreated === 1,
    );
    await admin.clearFaults();
    await stack.waitForOperation(published.body.operation.id);
    const publication = await stack.client.get<{ status: string; platformProductId: string }>(
      stack.ws(`/publications/${published.body.publication.id}`),
    );
    expect(publication.body.status).toBe('published');

    const listed = (await (await simGet('/products')).json()) as { items: SimProduct[] };
    expect(listed.items).toHaveLength(1);
    const product = listed.items[0]!;
    // Field by field, as the revision has them.
    expect(product).toMatchObject({
      productId: publication.body.platformProductId,
      title: data.title,
      description: data.description,
      price: data.price.amount,
      currency: data.price.currency,
      categoryId: data.categoryId,
      attributes: data.attributes,
    });
    expect(product.images).toHaveLength(2);
    // In the draft's order, with the very bytes the media library checked.
    for (const [i, media] of [jpeg, png].entries()) {
      const res = await simGet(`/images/${product.images[i]}`);
      expect(res.status).toBe(200);
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(media.checksumSha256);
      expect(bytes.equals(media.bytes)).toBe(true);
    }
    const counters = await admin.counters();
    expect(counters.imagesStored).toBe(2); // one per image, though the retry sent them again
    expect(counters.imageUploadCalls).toBeGreaterThanOrEqual(4);
    expect(counters.productsCreated).toBe(1);
  });

  /** A transferred image, once its media is ready: the media id the transfer yielded. */
  async function transferredImage(name: string): Promise<Media> {
    const accepted = await stack.client.post<{ transfer: { id: string }; operation: OperationBody }>(
      stack.ws('/material-transfers'),
      { sourceUrl: `${stack.sim.url}/platform/v1/media/${name}` },
      { key: randomUUID() },
    );
    expect(accepted.status).toBe(202);
    await stack.waitForOperation(accepted.body.operation.id);
    const transfer = await stack.client.get<{ mediaId: string }>(
      stack.ws(`/material-transfers/${accepted.body.transfer.id}`),
    );
    return waitUntil('the transferred media to be ready', async () => {
      const media = await stack.client.get<Media>(stack.ws(`/media/${transfer.body.mediaId}`));
      return media.body.status === 'ready' ? media.body : undefined;
    });
  }

  it('publishes an uploaded and a transferred image, then updates the product to a newer revision', async () => {
    const uploaded = await readyImage('flow-300x200.png', 'image/png');
    const transferred = await transferredImage('flow-48x48.jpg');
    const draft = await stack.client.post<{ id: string; revision: number }>(
      stack.ws('/product-drafts'),
      { title: 'Teapot', attributes: { color: 'blue' }, imageIds: [uploaded.id, transferred.id] },
      { key: randomUUID() },
    );
    const published = await stack.client.post<{ publication: { id: string }; operation: OperationBody }>(
      stack.ws('/publications'),
      { draftId: draft.body.id, revision: draft.body.revision, storeId: store.id },
      { key: randomUUID() },
    );
    await stack.waitForOperation(published.body.operation.id);
    const publication = await stack.client.get<{ platformProductId: string; liveRevision: number }>(
      stack.ws(`/publications/${published.body.publication.id}`),
    );
    const productPath = `/products/${publication.body.platformProductId}`;
    const first = (await (await simGet(productPath)).json()) as SimProduct;
    expect(first).toMatchObject({ title: 'Teapot', attributes: { color: 'blue' } });
    expect(first.images).toHaveLength(2);
    for (const [i, media] of [uploaded, transferred].entries()) {
      const bytes = Buffer.from(await (await simGet(`/images/${first.images[i]}`)).arrayBuffer());
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(media.checksumSha256);
    }

    const patched = await stack.client.request<{ revision: number }>(
      'PATCH',
      stack.ws(`/product-drafts/${draft.body.id}`),
      { body: { title: 'Teapot, larger', attributes: { color: 'red' } }, headers: { 'if-match': '"1"' } },
    );
    expect(patched.status).toBe(200);
    const before = await admin.counters();
    const update = await stack.client.post<{ update: { id: string }; operation: OperationBody }>(
      stack.ws(`/publications/${published.body.publication.id}/updates`),
      { revision: patched.body.revision },
      { key: randomUUID() },
    );
    expect(update.status).toBe(202);
    await stack.waitForOperation(update.body.operation.id);
    const second = (await (await simGet(productPath)).json()) as SimProduct;
    expect(second).toMatchObject({
      title: 'Teapot, larger',
      attributes: { color: 'red' },
      images: first.images,
    });
    const live = await stack.client.get<{ liveRevision: number }>(
      stack.ws(`/publications/${published.body.publication.id}`),
    );
    expect(live.body.liveRevision).toBe(2);

    // The update's event delivered again changes nothing at the marketplace.
    const event = await stack.eventFor('updateId', update.body.update.id);
    expect((await stack.redeliver(event.id, event.queue)).result).toEqual({ outcome: 'skipped' });
    const after = await admin.counters();
    expect(after.productsUpdated - before.productsUpdated).toBe(1);
    expect(after.imagesStored).toBe(before.imagesStored); // the product's images, not sent again
    expect(((await (await simGet(productPath)).json()) as SimProduct).title).toBe('Teapot, larger');
  });

  it('leaves out an image that is not ready, and refuses an image id the store never uploaded', async () => {
    const pending = await stack.client.post<Media>(
      stack.ws('/media'),
      { filename: 'later.png', contentType: 'image/png', size: 10 },
      { key: randomUUID() },
    );
    const draft = await stack.client.post<{ id: string; revision: number }>(
      stack.ws('/product-drafts'),
      { title: 'Not yet', imageIds: [pending.body.id] },
      { key: randomUUID() },
    );
    const published = await stack.client.post<{ publication: { id: string }; operation: OperationBody }>(
      stack.ws('/publications'),
      { draftId: draft.body.id, revision: draft.body.revision, storeId: store.id },
      { key: randomUUID() },
    );
    await stack.waitForOperation(published.body.operation.id);
    const listed = (await (await simGet('/products')).json()) as { items: SimProduct[] };
    expect(listed.items.find((p) => p.title === 'Not yet')?.images).toEqual([]);

    const refused = await fetch(`${stack.sim.url}/platform/v1/stores/${store.storeExternalId}/products`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'idempotency-key': randomUUID(),
        'content-type': 'application/json',
      },
      body: JSON.stringify({ title: 'x', images: ['img_99999999'] }),
    });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ error: 'UNKNOWN_IMAGE', images: ['img_99999999'] });
  });
});
