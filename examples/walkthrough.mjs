#!/usr/bin/env node
/**
 * From nothing to a product on the marketplace, with an image, then updated: what a client team
 * does first, through the typed client (packages/client). Read it top to bottom; run it against
 * the stack `bash scripts/start.sh` started (after `pnpm run build`):
 *
 *   node examples/walkthrough.mjs            # API http://127.0.0.1:3000, simulator :4010
 *   API_URL=… SIM_URL=… node examples/walkthrough.mjs
 *
 * Every write goes through `idempotent()`: one Idempotency-Key per logical command, retried under
 * that key until the answer is definitive, so running a step twice never does it twice.
 */
/* global fetch, process, console, setTimeout -- Node 20 globals */
import { randomUUID } from 'node:crypto';
// The typed client's build output (CommonJS: its named exports are read off the default import).
import listingClient from '../packages/client/dist/index.js';

const { createListingClient } = listingClient;
const API_URL = process.env.API_URL ?? 'http://127.0.0.1:3000';
const SIM_URL = process.env.SIM_URL ?? 'http://127.0.0.1:4010';

/** The answer's data, or a thrown error naming the step and the problem+json the API sent. */
function expectData(step, res) {
  const status = res.status ?? res.response.status; // idempotent() answers status; GET/POST response
  if (res.data === undefined) throw new Error(`${step}: HTTP ${status} ${JSON.stringify(res.error)}`);
  console.log(`✓ ${step} (HTTP ${status})`);
  return res.data;
}

async function main() {
  // 1. Register: a user, their first workspace and a token pair.
  const anonymous = createListingClient({ baseUrl: API_URL });
  const email = `walkthrough-${randomUUID().slice(0, 8)}@example.com`;
  const session = expectData(
    'register',
    await anonymous.POST('/v1/auth/register', { body: { email, password: 'a-long-password-1' } }),
  );
  const api = createListingClient({ baseUrl: API_URL, token: session.accessToken });
  const workspaceId = session.workspace.id;
  const path = (more = {}) => ({ path: { workspaceId, ...more } });

  /** Async commands answer 202 with an operation: poll it until it has ended. */
  async function finished(step, operationId) {
    for (let i = 0; i < 300; i++) {
      const { data } = await api.GET('/v1/workspaces/{workspaceId}/operations/{operationId}', {
        params: path({ operationId }),
      });
      if (data?.status === 'succeeded') return console.log(`✓ ${step}: operation succeeded`);
      if (data?.status === 'failed') throw new Error(`${step}: ${JSON.stringify(data.error)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${step}: operation ${operationId} still open after 30 s`);
  }

  // 2. Connect a store. The simulator accepts an apiKey starting with `valid-`.
  const connected = expectData(
    'connect a store',
    await api.idempotent('post', '/v1/workspaces/{workspaceId}/stores', {
      params: path(),
      body: {
        platform: 'sim',
        storeExternalId: `shop-${randomUUID().slice(0, 8)}`,
        apiKey: 'valid-demo',
        apiSecret: 's3cret',
      },
    }),
  );
  await finished('verify the store credentials', connected.operation.id);

  // 3. An image: declare it, PUT its bytes, complete it; the worker checks and derives it. The
  //    bytes here come from the simulator's image generator (any PNG, JPEG, WebP or GIF will do).
  const bytes = Buffer.from(
    await (await fetch(`${SIM_URL}/platform/v1/media/teapot-300x200.png`)).arrayBuffer(),
  );
  const media = expectData(
    'declare an image',
    await api.idempotent('post', '/v1/workspaces/{workspaceId}/media', {
      params: path(),
      body: { filename: 'teapot.png', contentType: 'image/png', size: bytes.length },
    }),
  );
  const put = await fetch(`${API_URL}/v1/workspaces/${workspaceId}/media/${media.id}/content`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${session.accessToken}`, 'content-type': 'image/png' },
    body: bytes,
  });
  if (put.status !== 200) throw new Error(`upload the bytes: HTTP ${put.status} ${await put.text()}`);
  console.log('✓ upload the bytes (HTTP 200)');
  const completed = expectData(
    'complete the upload',
    await api.idempotent('post', '/v1/workspaces/{workspaceId}/media/{mediaId}/complete', {
      params: path({ mediaId: media.id }),
    }),
  );
  await finished('derive the image', completed.operation.id);

  // 4. A product draft naming the image (revision 1).
  const draft = expectData(
    'create a draft',
    await api.idempotent('post', '/v1/workspaces/{workspaceId}/product-drafts', {
      params: path(),
      body: {
        title: 'Teapot',
        price: { amount: '24.00', currency: 'EUR' },
        attributes: { color: 'blue' },
        imageIds: [media.id],
      },
    }),
  );

  // 5. Publish revision 1 to the store: the worker uploads the image, then creates the product.
  const published = expectData(
    'publish revision 1',
    await api.idempotent('post', '/v1/workspaces/{workspaceId}/publications', {
      params: path(),
      body: { draftId: draft.id, revision: draft.revision, storeId: connected.store.id },
    }),
  );
  await finished('create the product at the marketplace', published.operation.id);

  // 6. Edit the draft (If-Match: the revision edited) and push revision 2 to the live product.
  const edited = expectData(
    'edit the draft',
    await api.idempotent('patch', '/v1/workspaces/{workspaceId}/product-drafts/{draftId}', {
      params: { ...path({ draftId: draft.id }), header: { 'If-Match': `"${draft.revision}"` } },
      body: { title: 'Teapot, 1.5 l', attributes: { color: 'red' } },
    }),
  );
  const publicationId = published.publication.id;
  const update = expectData(
    'push revision 2',
    await api.idempotent('post', '/v1/workspaces/{workspaceId}/publications/{publicationId}/updates', {
      params: path({ publicationId }),
      body: { revision: edited.revision },
    }),
  );
  await finished('update the product at the marketplace', update.operation.id);

  // 7. The publication says which revision the marketplace shows.
  const publication = expectData(
    'read the publication',
    await api.GET('/v1/workspaces/{workspaceId}/publications/{publicationId}', {
      params: path({ publicationId }),
    }),
  );
  console.log(
    `product ${publication.platformProductId} on store ${connected.store.id}: live revision ${publication.liveRevision}`,
  );
  // For scripts (the e2e test reads it): the ids this run made.
  console.log(
    JSON.stringify({
      workspaceId,
      storeExternalId: connected.store.storeExternalId,
      productId: publication.platformProductId,
    }),
  );
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
