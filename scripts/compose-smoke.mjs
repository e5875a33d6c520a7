#!/usr/bin/env node
/* global console, fetch, process, setTimeout, AbortSignal -- Node 20 globals */
/**
 * A smoke flow against a running stack (docker-compose.yml, or scripts/start.sh): register →
 * connect a store → verified by the worker → draft → publish → the product is at the simulator.
 * Exits 0 when every step holds, 1 with the step that did not.
 *
 *   node scripts/compose-smoke.mjs [API_URL] [SIM_URL]   (default http://127.0.0.1:3000, :4010)
 */
import { randomUUID } from 'node:crypto';

const api = process.argv[2] ?? 'http://127.0.0.1:3000';
const sim = process.argv[3] ?? 'http://127.0.0.1:4010';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function call(method, path, { token, body, key } = {}) {
  const headers = { ...(body ? { 'content-type': 'application/json' } : {}) };
  if (token) headers.authorization = `Bearer ${token}`;
  if (key) headers['idempotency-key'] = key;
  const res = await fetch(api + path, {
    method,
    headers,
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

function expect(step, ok, detail) {
  if (!ok) throw new Error(`${step}: ${JSON.stringify(detail)}`);
  console.log(`ok  ${step}`);
}

async function settled(ws, token, operationId) {
  for (let i = 0; i < 120; i++) {
    const op = await call('GET', `/v1/workspaces/${ws}/operations/${operationId}`, { token });
    if (op.body?.status === 'succeeded' || op.body?.status === 'failed') return op.body;
    await sleep(500);
  }
  throw new Error(`operation ${operationId} did not finish in 60 s`);
}

async function main() {
  for (let i = 0; ; i++) {
    const ready = await fetch(`${api}/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (i === 120) throw new Error(`${api}/health/ready did not answer 200 in 60 s`);
    await sleep(500);
  }
  const email = `smoke-${randomUUID()}@example.test`;
  const reg = await call('POST', '/v1/auth/register', { body: { email, password: `pw-${randomUUID()}` } });
  expect('register', reg.status === 201, reg);
  const token = reg.body.accessToken;
  const ws = reg.body.workspace.id;

  const shop = `smoke-${randomUUID().slice(0, 8)}`;
  const store = await call('POST', `/v1/workspaces/${ws}/stores`, {
    token,
    key: randomUUID(),
    body: { platform: 'sim', storeExternalId: shop, apiKey: 'valid-smoke', apiSecret: 'smoke-secret' },
  });
  expect('connect a store (202)', store.status === 202, store);
  const verified = await settled(ws, token, store.body.operation.id);
  expect('the worker verified it', verified.status === 'succeeded', verified);
  const active = await call('GET', `/v1/workspaces/${ws}/stores/${store.body.store.id}`, { token });
  expect('the store is active', active.body?.status === 'active', active);

  const draft = await call('POST', `/v1/workspaces/${ws}/product-drafts`, {
    token,
    key: randomUUID(),
    body: { title: 'Smoke test product', price: { amount: '9.99', currency: 'EUR' } },
  });
  expect('create a draft', draft.status === 201, draft);
  const publication = await call('POST', `/v1/workspaces/${ws}/publications`, {
    token,
    key: randomUUID(),
    body: { storeId: store.body.store.id, draftId: draft.body.id, revision: draft.body.revision },
  });
  expect('publish it (202)', publication.status === 202, publication);
  const published = await settled(ws, token, publication.body.operation.id);
  expect('the worker published it', published.status === 'succeeded', published);
  const done = await call('GET', `/v1/workspaces/${ws}/publications/${publication.body.publication.id}`, {
    token,
  });
  expect('the publication is published', done.body?.status === 'published', done);

  const listed = await fetch(`${sim}/platform/v1/stores/${shop}/products`, {
    headers: { authorization: 'Bearer valid-smoke' },
  }).then((r) => r.json());
  const product = (listed.items ?? []).find((p) => p.productId === done.body.platformProductId);
  expect('the product is at the simulator', product?.title === 'Smoke test product', listed);
}

main().then(
  () => console.log('smoke: passed'),
  (error) => {
    console.error(`smoke: FAILED: ${error.message}`);
    process.exit(1);
  },
);
