import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { useTestDatabase } from '@listing/testing';
import { CapabilityStack, credentials } from '../capabilities/stack';
import { waitUntil } from '../outbox/processes';
import { ApiClient } from '../support/api-client';
import { descendsFrom, OtlpReceiver, renderTrace, SPAN_KIND, type ReceivedSpan } from './otlp-receiver';

const t = useTestDatabase();
jest.setTimeout(90_000);

const receiver = new OtlpReceiver();

/** The stack with every role exporting to the in-test receiver (JSON encoding, short batches). */
class TracedStack extends CapabilityStack {
  tracingEnv(): Record<string, string> {
    return {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
  }

  override spawnApi(name: string, overrides: Record<string, string> = {}) {
    return super.spawnApi(name, { ...(name === 'api' ? this.tracingEnv() : {}), ...overrides });
  }

  override roleEnv(extra: Record<string, string> = {}) {
    return super.roleEnv({ ...this.tracingEnv(), ...extra });
  }
}

const attr = (s: ReceivedSpan, key: string) => s.attributes[key];
/** A pg span's SQL text (old and new semantic conventions). */
const statement = (s: ReceivedSpan) => attr(s, 'db.statement') ?? attr(s, 'db.query.text');
/** The API's HTTP server span of `method` on the route template `route` (instrumentation-http). */
const isApiServerSpan = (s: ReceivedSpan, method: string, route: string) =>
  s.service === 'listing-api' &&
  s.kind === SPAN_KIND.SERVER &&
  attr(s, 'http.route') === route &&
  (attr(s, 'http.method') ?? attr(s, 'http.request.method')) === method;

/**
 * OpenTelemetry through the asynchronous path (docs/operations.md#tracing), with the real api,
 * dispatcher, worker and platform-sim processes exporting over OTLP/HTTP to a receiver in this
 * test: one publication is one trace, from the HTTP request through the outbox to the
 * marketplace call.
 */
describe('tracing: one trace from the HTTP request to the marketplace call (real processes)', () => {
  const stack = new TracedStack(t);

  beforeAll(async () => {
    await receiver.start();
    await stack.start();
  });
  afterAll(async () => {
    await stack.stop();
    await receiver.stop();
  });

  it('POST /publications → create → send (dispatcher) → process (worker) → HTTP call to platform-sim, in one trace', async () => {
    const store = await stack.activeStore();
    const draft = await stack.draft({ title: 'Traced mug' });
    const res = await stack.client.post<{ publication: { id: string }; operation: { id: string } }>(
      stack.ws('/publications'),
      { draftId: draft.id, revision: draft.revision, storeId: store.id },
      { key: randomUUID() },
    );
    expect(res.status).toBe(202);
    await stack.waitForOperation(res.body.operation.id);

    // The API's HTTP server span of that POST (instrumentation-http, named after the route).
    const server = await waitUntil('the HTTP server span of the POST', async () =>
      receiver.spans.find((s) => isApiServerSpan(s, 'POST', '/v1/workspaces/:workspaceId/publications')),
    );
    const simPort = Number(new URL(stack.simUrl).port);
    const find = (spans: ReceivedSpan[]) => {
      const create = spans.find(
        (s) =>
          s.service === 'listing-api' && s.kind === SPAN_KIND.PRODUCER && s.name === 'create publications',
      );
      const send = spans.find(
        (s) =>
          s.service === 'listing-dispatcher' &&
          s.kind === SPAN_KIND.PRODUCER &&
          s.name === 'send publications',
      );
      const processed = spans.find(
        (s) =>
          s.service === 'listing-worker' &&
          s.kind === SPAN_KIND.CONSUMER &&
          s.name === 'process publications',
      );
      const call = spans.find(
        (s) =>
          s.service === 'listing-worker' &&
          s.kind === SPAN_KIND.CLIENT &&
          Number(attr(s, 'server.port')) === simPort &&
          attr(s, 'http.request.method') === 'POST',
      );
      return create && send && processed && call ? { create, send, processed, call } : undefined;
    };
    const found = await waitUntil('the whole trace at the receiver', async () =>
      find(receiver.trace(server.traceId)),
    ).catch((error: Error) => {
      // Say what did arrive: which part of the path left the trace.
      const others = receiver.spans.filter(
        (s) =>
          s.traceId !== server.traceId && (s.kind === SPAN_KIND.PRODUCER || s.kind === SPAN_KIND.CONSUMER),
      );
      throw new Error(
        `${error.message}\ntrace ${server.traceId}:\n${renderTrace(receiver.trace(server.traceId))}\n` +
          `messaging spans elsewhere: ${others.map((s) => `${s.name} (${s.service})`).join(', ')}`,
      );
    });
    const trace = receiver.trace(server.traceId);
    const tree = renderTrace(trace);
    // TRACING_E2E_TREE_FILE=<file>: the tree for docs/operations.md#tracing.
    if (process.env.TRACING_E2E_TREE_FILE) writeFileSync(process.env.TRACING_E2E_TREE_FILE, `${tree}\n`);

    // One tree, parent to child: server ⊃ create → send → process ⊃ the marketplace call.
    const { create, send, processed, call } = found;
    expect({ tree, createUnderServer: descendsFrom(trace, create, server) }).toMatchObject({
      createUnderServer: true,
    });
    expect(send.parentSpanId).toBe(create.spanId);
    expect(processed.parentSpanId).toBe(send.spanId);
    expect(descendsFrom(trace, call, processed)).toBe(true);
    // The outbox insert is a pg span inside the request: the COMMIT message's EXECUTE of the
    // prepared insert (the text INSERT behind a transaction pooler).
    expect(
      trace.some(
        (s) =>
          s.service === 'listing-api' &&
          s.kind === SPAN_KIND.CLIENT &&
          /EXECUTE s_outbox_insert_event\(|INSERT INTO outbox_events/.test(String(statement(s) ?? '')) &&
          descendsFrom(trace, s, server),
      ),
    ).toBe(true);
    // Messaging conventions on the three messaging spans.
    for (const [span, operation] of [
      [create, 'create'],
      [send, 'send'],
      [processed, 'process'],
    ] as const) {
      expect(span.attributes).toMatchObject({
        'messaging.system': 'bullmq',
        'messaging.destination.name': 'publications',
        'messaging.operation.type': operation,
      });
    }
    const event = await stack.eventFor('publicationId', res.body.publication.id);
    expect(processed.attributes).toMatchObject({
      'messaging.message.id': event.id,
      'listing.outbox.outcome': 'completed',
    });

    // The context is stored with the event, in its own column, never in the payload.
    const { rows } = await t.owner.query(`select traceparent, payload from outbox_events where id = $1`, [
      event.id,
    ]);
    expect(rows[0].traceparent).toBe(`00-${server.traceId}-${create.spanId}-01`);
    expect(JSON.stringify(rows[0].payload)).not.toContain(server.traceId);
  });

  it('no exported span carries a secret: credentials, passwords and tokens stay out of every role', async () => {
    // The pg spans record each message's text, and some messages inline their values (BEGIN's
    // binding, EXECUTE of a prepared statement, the idempotency record's stored response): every
    // path that handles a secret runs here with tracing on, then every export body is scanned.
    const secrets = [stack.user.password, stack.user.accessToken, stack.user.refreshToken];
    const store = await stack.activeStore(secrets);
    const rotated = credentials('rotated');
    secrets.push(rotated.apiKey, rotated.apiSecret);
    const replaced = await stack.client.request<{ operation: { id: string } }>(
      'PUT',
      stack.ws(`/stores/${store.id}/credentials`),
      { body: rotated, key: randomUUID() },
    );
    expect(replaced.status).toBe(202);
    await stack.waitForOperation(replaced.body.operation.id);
    const anonymous = new ApiClient(stack.apiUrl);
    const login = await anonymous.post<{ accessToken: string; refreshToken: string }>('/v1/auth/login', {
      email: stack.user.email,
      password: stack.user.password,
    });
    expect(login.status).toBe(200);
    const refreshed = await anonymous.post<{ accessToken: string; refreshToken: string }>(
      '/v1/auth/refresh',
      { refreshToken: login.body.refreshToken },
    );
    expect(refreshed.status).toBe(200);
    secrets.push(
      login.body.accessToken,
      login.body.refreshToken,
      refreshed.body.accessToken,
      refreshed.body.refreshToken,
    );
    // The new access token authenticates a read (its lookup is a pg span too).
    expect(
      (await new ApiClient(stack.apiUrl, refreshed.body.accessToken).get(stack.ws('/stores'))).status,
    ).toBe(200);

    // Wait until every role has exported what it did: the API's span of that read (its last
    // request) and the worker's verification of the rotated credentials.
    await waitUntil('the API to export the read with the refreshed token', async () =>
      receiver.spans.some((s) => isApiServerSpan(s, 'GET', '/v1/workspaces/:workspaceId/stores')),
    );
    const event = await waitUntil('the rotation event', async () => {
      const { rows } = await t.owner.query(
        `select id from outbox_events where payload->>'storeId' = $1 order by created_at desc limit 1`,
        [store.id],
      );
      return rows[0]?.id as string | undefined;
    });
    await waitUntil("the worker to export the rotated credentials' verification", async () =>
      receiver.spans.some(
        (s) => s.name === 'process stores' && s.attributes['messaging.message.id'] === event,
      ),
    );
    // The scan sees the paths it clears: pg spans of the API and a marketplace call of the worker.
    const exported = receiver.bodies.join('\n');
    expect(exported).toContain('listing-api');
    expect(exported).toContain('listing-worker');
    expect(receiver.spans.some((s) => s.service === 'listing-api' && statement(s) !== undefined)).toBe(true);
    for (const secret of secrets) {
      expect({ secret, exported: exported.includes(secret) }).toEqual({ secret, exported: false });
    }
  });

  it('with the endpoint unset a role starts no SDK: it logs "tracing off", exports nothing, stores no context', async () => {
    // An API of the same stack without OTEL_EXPORTER_OTLP_ENDPOINT (a service name of its own,
    // so anything it exported would show at the receiver).
    const { url, proc } = await stack.spawnApi('api-untraced', { OTEL_SERVICE_NAME: 'listing-api-untraced' });
    expect(proc.output()).toMatch(/"tracing":"off".*"msg":"tracing off"/);
    const client = new ApiClient(url, stack.client.token);
    const before = receiver.spans.length;
    const created = await client.post<{ id: string }>(
      stack.ws('/product-drafts'),
      { title: 'Untraced draft', price: { amount: '1.00', currency: 'EUR' } },
      { key: randomUUID() },
    );
    expect(created.status).toBe(201);
    const store = await client.post<{ store: { id: string }; operation: { id: string } }>(
      stack.ws('/stores'),
      {
        platform: 'sim',
        storeExternalId: `shop-${randomUUID()}`,
        apiKey: 'valid-untraced',
        apiSecret: 's3cret',
      },
      { key: randomUUID() },
    );
    expect(store.status).toBe(202);
    await stack.waitForOperation(store.body.operation.id);
    const event = await stack.eventFor('storeId', store.body.store.id);
    const { rows } = await t.owner.query(`select traceparent, tracestate from outbox_events where id = $1`, [
      event.id,
    ]);
    expect(rows[0]).toEqual({ traceparent: null, tracestate: null });
    // The traced roles exported meanwhile (the worker's job is a trace of its own now); wait for
    // one more batch period before looking for the untraced API's spans.
    await waitUntil('the worker to export the store verification', async () =>
      receiver.spans.some(
        (s) => s.name === 'process stores' && s.attributes['messaging.message.id'] === event.id,
      ),
    );
    await new Promise((r) => setTimeout(r, 300));
    const fromUntraced = receiver.spans.slice(before).filter((s) => s.service === 'listing-api-untraced');
    expect(fromUntraced).toEqual([]);
    // Its job still ran under a process span, as the root of a trace of its own.
    const processed = receiver.spans.find(
      (s) => s.name === 'process stores' && s.attributes['messaging.message.id'] === event.id,
    )!;
    expect(processed.parentSpanId).toBe('');
  });
});
