import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { loadPlatformConfig } from '../../src/config/app-config';
import { CredentialCipher } from '../../src/modules/stores/credential-cipher';
import { CapabilityStack, credentials, type OperationBody } from './stack';

const t = useTestDatabase();
jest.setTimeout(90_000);

interface StoreBody {
  store: { id: string; status: string; credentialVersion: number; shopName: string | null };
  operation: OperationBody;
}

/** Stores and credential verification over HTTP, with real api, dispatcher, worker and platform-sim. */
describe('capability: stores and credential verification (real processes)', () => {
  const stack = new CapabilityStack(t);
  const secrets: string[] = [];
  const creds = (tag: string, valid = true) => {
    const c = credentials(tag, valid);
    secrets.push(c.apiKey, c.apiSecret);
    return c;
  };

  beforeAll(() => stack.start());
  afterAll(() => stack.stop());

  const createStore = (body: Record<string, unknown>, key = randomUUID()) =>
    stack.client.post<StoreBody>(stack.ws('/stores'), body, { key });

  it('creates a store (202 + pending operation), verifies it in the worker, replays the first body exactly, and a forced redelivery calls the platform no more', async () => {
    const key = randomUUID();
    const body = { platform: 'sim', storeExternalId: `shop-${randomUUID()}`, ...creds('create') };
    const first = await createStore(body, key);
    expect(first.status).toBe(202);
    expect(first.body.store).toMatchObject({
      status: 'pending_verification',
      credentialVersion: 1,
      shopName: null,
    });
    expect(first.body.operation).toMatchObject({
      status: 'pending',
      kind: 'store.verify-credentials',
      resourceId: first.body.store.id,
    });
    expect(first.text).not.toContain(body.apiKey);

    await stack.waitForOperation(first.body.operation.id);
    const store = await stack.client.get<StoreBody['store']>(stack.ws(`/stores/${first.body.store.id}`));
    expect(store.body).toMatchObject({
      status: 'active',
      credentialVersion: 1,
      shopName: `Sim Shop ${body.storeExternalId}`,
    });

    // Replay after the work finished: the 202 body exactly as first returned (pending).
    const replay = await createStore(body, key);
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    const { rows } = await t.owner.query(
      `select count(*)::int as n from stores where store_external_id = $1`,
      [body.storeExternalId],
    );
    expect(rows[0].n).toBe(1);

    // Forced redelivery of the verification job: no second call at the platform, nothing moves.
    const before = await stack.admin.counters();
    const event = await stack.eventFor('storeId', first.body.store.id);
    expect(await stack.redeliver(event.id, event.queue)).toMatchObject({
      duplicate: false,
      result: { outcome: 'active' },
    });
    const after = await stack.admin.counters();
    expect(after.verifyCalls).toBe(before.verifyCalls);
    expect((await stack.client.get(stack.ws(`/stores/${first.body.store.id}`))).body).toEqual(store.body);
    expect(
      (await stack.client.get<OperationBody>(stack.ws(`/operations/${first.body.operation.id}`))).body.status,
    ).toBe('succeeded');

    const list = await stack.client.get<{ items: Array<{ id: string }> }>(stack.ws('/stores'));
    expect(list.body.items.map((s) => s.id)).toContain(first.body.store.id);
  });

  it('requires Idempotency-Key, refuses a second connection of the same marketplace store, and a reused key with another body', async () => {
    const body = { platform: 'sim', storeExternalId: `shop-${randomUUID()}`, ...creds('conflicts') };
    const missing = await stack.client.post(stack.ws('/stores'), body);
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REQUIRED' });
    const key = randomUUID();
    const created = await createStore(body, key);
    expect(created.status).toBe(202);
    const again = await createStore(body);
    expect(again.status).toBe(409);
    // The conflict names the store it conflicts with, as the other conflicts do.
    expect(again.body).toMatchObject({ code: 'STORE_ALREADY_CONNECTED', storeId: created.body.store.id });
    const reused = await createStore({ ...body, storeExternalId: `shop-${randomUUID()}` }, key);
    expect(reused.status).toBe(409);
    expect(reused.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
  });

  it('invalid credentials: the store becomes invalid_credentials and the operation fails with a safe error', async () => {
    const body = { platform: 'sim', storeExternalId: `shop-${randomUUID()}`, ...creds('invalid', false) };
    const res = await createStore(body);
    expect(res.status).toBe(202);
    const op = await stack.waitForOperation(res.body.operation.id, 'failed');
    expect(op.error).toEqual({
      code: 'STORE_CREDENTIALS_INVALID',
      message: 'the marketplace rejected the store credentials',
    });
    const store = await stack.client.get<StoreBody['store']>(stack.ws(`/stores/${res.body.store.id}`));
    expect(store.body.status).toBe('invalid_credentials');
  });

  it('no verdict after every attempt: the store says verification_failed (not pending forever); new credentials verify again', async () => {
    await stack.restartDispatcher({ OUTBOX_HANDLER_BACKOFF_MS: '1' }); // ten attempts in about a second
    await stack.admin.setFaults({ errorRate: 1, routes: ['POST /platform/v1/credentials/verify'] });
    let storeId: string;
    try {
      const res = await createStore({
        platform: 'sim',
        storeExternalId: `shop-${randomUUID()}`,
        ...creds('nv'),
      });
      expect(res.status).toBe(202);
      storeId = res.body.store.id;
      const op = await stack.waitForOperation(res.body.operation.id, 'failed');
      expect(op.error?.code).toBe('PLATFORM_UNAVAILABLE');
      const store = await stack.client.get<StoreBody['store']>(stack.ws(`/stores/${storeId}`));
      expect(store.body).toMatchObject({ status: 'verification_failed', credentialVersion: 1 });
    } finally {
      await stack.admin.clearFaults();
      await stack.restartDispatcher();
    }
    const again = await stack.client.post<StoreBody>(
      stack.ws(`/stores/${storeId}/credentials`),
      creds('nv2'),
      {
        key: randomUUID(),
      },
    );
    expect(again.status).toBe(202);
    await stack.waitForOperation(again.body.operation.id);
    const store = await stack.client.get<StoreBody['store']>(stack.ws(`/stores/${storeId}`));
    expect(store.body).toMatchObject({ status: 'active', credentialVersion: 2 });
  });

  it('replaces credentials (new version, verified again); a stale job for replaced credentials changes nothing', async () => {
    const created = await createStore({
      platform: 'sim',
      storeExternalId: `shop-${randomUUID()}`,
      ...creds('v1'),
    });
    await stack.waitForOperation(created.body.operation.id);
    const storeId = created.body.store.id;

    // With the worker stopped, replace twice: v2 (invalid) is superseded by v3 (valid) before any check.
    await stack.stopWorker();
    const key2 = randomUUID();
    const v2Body = creds('v2', false);
    const v2 = await stack.client.request<StoreBody>('PUT', stack.ws(`/stores/${storeId}/credentials`), {
      body: v2Body,
      key: key2,
    });
    expect(v2.status).toBe(202);
    expect(v2.body.store).toMatchObject({
      id: storeId,
      status: 'pending_verification',
      credentialVersion: 2,
    });
    const v3 = await stack.client.post<StoreBody>(stack.ws(`/stores/${storeId}/credentials`), creds('v3'), {
      key: randomUUID(),
    });
    expect(v3.status).toBe(202);
    expect(v3.body.store.credentialVersion).toBe(3);
    const before = await stack.admin.counters();
    await stack.startWorker();

    await stack.waitForOperation(v3.body.operation.id);
    const stale = await stack.waitForOperation(v2.body.operation.id, 'failed');
    expect(stale.error?.code).toBe('CREDENTIALS_SUPERSEDED');
    const store = await stack.client.get<StoreBody['store']>(stack.ws(`/stores/${storeId}`));
    expect(store.body).toMatchObject({ status: 'active', credentialVersion: 3 });
    // Only v3 was checked at the platform; the stale v2 job never called it.
    expect((await stack.admin.counters()).verifyCalls - before.verifyCalls).toBe(1);

    // Replaying the v2 request returns its own first body (version 2, pending), not the current store.
    const replay = await stack.client.request<StoreBody>('PUT', stack.ws(`/stores/${storeId}/credentials`), {
      body: v2Body,
      key: key2,
    });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(v2.body);

    // Redelivering the v1 job now: superseded, the store stays active on v3.
    const events = await t.owner.query(
      `select id, queue from outbox_events where payload->>'storeId' = $1 and (payload->>'version')::int = 1`,
      [storeId],
    );
    expect(await stack.redeliver(events.rows[0].id, events.rows[0].queue)).toMatchObject({
      result: { outcome: 'superseded' },
    });
    expect((await stack.client.get(stack.ws(`/stores/${storeId}`))).body).toEqual(store.body);
  });

  it('checks an active store again: valid → succeeded, the store unchanged; replays; a key the marketplace now refuses → invalid_credentials; a store not active → 409', async () => {
    const created = await createStore({
      platform: 'sim',
      storeExternalId: `shop-${randomUUID()}`,
      ...creds('chk'),
    });
    await stack.waitForOperation(created.body.operation.id);
    const storeId = created.body.store.id;
    const storeBefore = (await stack.client.get(stack.ws(`/stores/${storeId}`))).body;
    const check = (key = randomUUID()) =>
      stack.client.post<{ check: { storeId: string; credentialVersion: number }; operation: OperationBody }>(
        stack.ws(`/stores/${storeId}/credential-checks`),
        undefined,
        { key },
      );

    const key = randomUUID();
    const calls = (await stack.admin.counters()).verifyCalls;
    const first = await check(key);
    expect(first.status).toBe(202);
    expect(first.body.check).toEqual({ storeId, credentialVersion: 1 });
    expect(first.body.operation).toMatchObject({ status: 'pending', kind: 'store.check-credentials' });
    expect((await stack.waitForOperation(first.body.operation.id)).status).toBe('succeeded');
    expect((await stack.admin.counters()).verifyCalls).toBe(calls + 1);
    expect((await stack.client.get(stack.ws(`/stores/${storeId}`))).body).toEqual(storeBefore);

    // The replay is the first body (pending); a forced redelivery finds the operation finished.
    const replay = await check(key);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    const event = await stack.eventFor('operationId', first.body.operation.id);
    expect(await stack.redeliver(event.id, event.queue)).toMatchObject({ result: { outcome: 'skipped' } });
    expect((await stack.admin.counters()).verifyCalls).toBe(calls + 1);

    // The merchant revoked the key at the marketplace: stored now is a key the simulator refuses.
    const config = loadPlatformConfig({});
    const cipher = CredentialCipher.parse(config.CREDENTIAL_KEYS, config.CREDENTIAL_KEY_ID);
    const revoked = cipher.encrypt(
      { apiKey: 'revoked-key', apiSecret: 'secret' },
      { workspaceId: stack.user.workspaceId, storeId, version: 1 },
    );
    await t.owner.query(
      `update store_credentials set key_id = $1, iv = $2, ciphertext = $3, auth_tag = $4 where store_id = $5 and version = 1`,
      [revoked.keyId, revoked.iv, revoked.ciphertext, revoked.authTag, storeId],
    );
    const second = await check();
    const failed = await stack.waitForOperation(second.body.operation.id, 'failed');
    expect(failed.error).toEqual({
      code: 'STORE_CREDENTIALS_INVALID',
      message: 'the marketplace rejected the store credentials',
    });
    const after = await stack.client.get<StoreBody['store']>(stack.ws(`/stores/${storeId}`));
    expect(after.body).toMatchObject({ status: 'invalid_credentials', credentialVersion: 1 });

    // Only an active store is checked.
    const refused = await check();
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'STORE_NOT_ACTIVE', storeStatus: 'invalid_credentials' });
  });

  it('stores credentials encrypted (AES-256-GCM, key id) and no credential value reaches events, idempotency rows, audit, logs or responses', async () => {
    const { rows } = await t.owner.query(`select key_id, iv, ciphertext, auth_tag from store_credentials`);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.key_id).toBe('dev-1');
      expect(row.iv).toHaveLength(12);
      expect(row.auth_tag).toHaveLength(16);
      for (const s of secrets) expect(Buffer.from(row.ciphertext).includes(Buffer.from(s))).toBe(false);
    }
    await stack.assertNoSecrets(secrets);
  });
});
