import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '@listing/testing';
import { FAILURE_CODES } from '../../src/failure-codes';
import { PRODUCT_DRAFT_FEATURES } from '../../src/modules/product-drafts/product-draft.features';
import { registerUser, type RegisteredUser } from '../support/api-client';
import { startApi, type InProcessApi } from '../support/in-process-api';
import { OpenApiContract } from '../support/openapi-contract';
// The repository's script (CommonJS, run as is by CI and by hand), not a copy of it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { bareResponses } = require('../../../../scripts/openapi-bare-responses.cjs') as {
  bareResponses(document: unknown): string[];
};

const t = useTestDatabase();

type Json = Record<string, unknown>;
interface Document {
  paths: Record<
    string,
    Record<string, { requestBody?: Json; responses: Record<string, Json>; parameters?: Json[] }>
  >;
  components: { schemas: Record<string, Json> };
}

/** The document itself, and the checker every e2e response goes through (support/contract-fetch.ts). */
describe('the OpenAPI contract', () => {
  let api: InProcessApi;
  let alice: RegisteredUser;
  let doc: Document;
  let contract: OpenApiContract;

  beforeAll(async () => {
    api = await startApi(t.info);
    alice = await registerUser(api.url, 'Contract');
    doc = (await (await fetch(`${api.url}/docs/openapi.json`)).json()) as Document;
    contract = new OpenApiContract(doc as unknown as Json);
  });
  afterAll(async () => {
    await api?.close();
  });

  it('documents a real schema for every success body, and Location on every 201 and 202', () => {
    expect(bareResponses(doc)).toEqual([]);
    // The script fails on what it should: a bare object, a missing Location.
    const broken = structuredClone(doc);
    const store = broken.paths['/v1/workspaces/{workspaceId}/stores/{storeId}']!.get!.responses['200']!;
    (store.content as Json)['application/json'] = { schema: { type: 'object' } };
    delete broken.paths['/v1/workspaces/{workspaceId}/media']!.post!.responses['201']!.headers;
    expect(bareResponses(broken)).toEqual([
      'POST /v1/workspaces/{workspaceId}/media 201: no Location header',
      'GET /v1/workspaces/{workspaceId}/stores/{storeId} 200: bare schema {"type":"object"}',
    ]);
  });

  it('declares each path parameter as the route reads it: ids as UUIDs, a feature id by name', () => {
    const run =
      doc.paths['/v1/workspaces/{workspaceId}/product-drafts/{draftId}/features/{featureId}/executions']!;
    const schemaOf = (name: string) => run.post!.parameters!.find((p) => p.name === name)?.schema;
    expect(schemaOf('draftId')).toEqual({ type: 'string', format: 'uuid' });
    // Not a UUID: a client validating formats would refuse every real call.
    expect(schemaOf('featureId')).toEqual({
      type: 'string',
      enum: Object.keys(PRODUCT_DRAFT_FEATURES),
    });
  });

  it('states every failure code an operation can end with, as one enum with a description each', () => {
    const failure = doc.components.schemas.OperationFailureCode as {
      enum: string[];
      'x-enum-descriptions': string[];
    };
    expect(failure.enum).toEqual(Object.keys(FAILURE_CODES).sort());
    expect(failure['x-enum-descriptions']).toEqual(failure.enum.map((c) => FAILURE_CODES[c]));
    expect(JSON.stringify(doc.components.schemas.OperationError)).toContain(
      '#/components/schemas/OperationFailureCode',
    );
  });

  it('fails a response that drifts from it: an unknown field, an undocumented status or code, a missing header', async () => {
    const path = `/v1/workspaces/${alice.workspaceId}/product-drafts`;
    const res = await fetch(`${api.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'contract' }),
    });
    const observed = {
      method: 'POST',
      path,
      status: res.status,
      headers: res.headers,
      text: await res.text(),
    };
    expect(res.status).toBe(201);
    expect(contract.check(observed)).toEqual([]);

    const draft = JSON.parse(observed.text) as Json;
    const route = 'POST /v1/workspaces/{workspaceId}/product-drafts';
    expect(contract.check({ ...observed, text: JSON.stringify({ ...draft, secret: 'x' }) })).toEqual([
      `${route} → 201: body must NOT have additional properties {"additionalProperty":"secret"}`,
    ]);
    expect(contract.check({ ...observed, text: JSON.stringify({ ...draft, revision: '1' }) })).toEqual([
      `${route} → 201: body/revision must be integer {"type":"integer"}`,
    ]);
    expect(contract.check({ ...observed, status: 418 })).toEqual([`${route} → 418: status not documented`]);
    const noLocation = new Headers(observed.headers);
    noLocation.delete('location');
    expect(contract.check({ ...observed, headers: noLocation })).toEqual([
      `${route} → 201: header location missing`,
    ]);
    const problem = new Headers({ 'content-type': 'application/problem+json' });
    const conflict = (code: string) =>
      contract.check({
        ...observed,
        status: 409,
        headers: problem,
        text: JSON.stringify({ type: '/docs/problems/x', title: 'x', status: 409, code }),
      });
    expect(conflict('IDEMPOTENCY_KEY_REUSED')).toEqual([]);
    expect(conflict('ALREADY_PUBLISHED').join('\n')).toMatch(
      /body\/code must be equal to one of the allowed values/,
    );
    expect(
      contract.check({
        ...observed,
        headers: new Headers({ ...Object.fromEntries(observed.headers), 'content-type': 'text/plain' }),
      }),
    ).toEqual([`${route} → 201: content type text/plain not documented (application/json)`]);
  });

  /** Every write route of the document, and whether it takes bytes (the media upload) rather than JSON. */
  const writeRoutes = () =>
    Object.entries(doc.paths).flatMap(([template, operations]) =>
      Object.keys(operations)
        .filter((method) => ['post', 'put', 'patch', 'delete'].includes(method))
        .map((method) => {
          const content = operations[method]!.requestBody?.content as Json | undefined;
          return { template, method, bytes: content !== undefined && !content['application/json'] };
        }),
    );

  /** Sends `body` as JSON to a write route as alice, with made-up ids, a key and an If-Match. */
  const sendJson = async (template: string, method: string, body: string) => {
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) =>
      name === 'workspaceId' ? alice.workspaceId : name === 'revision' ? '1' : randomUUID(),
    );
    const res = await fetch(`${api.url}${path}`, {
      method: method.toUpperCase(),
      headers: {
        authorization: `Bearer ${alice.accessToken}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
        'if-match': '"1"',
      },
      body,
    });
    const problem = (await res.json().catch(() => ({}))) as {
      code?: string;
      errors?: Array<{ path: string }>;
    };
    return { status: res.status, ...problem };
  };

  it('answers a number beyond a double in any JSON body with 422 naming its path, on every write route', async () => {
    const writes = writeRoutes();
    expect(writes.length).toBeGreaterThan(20);
    const records = async () => (await t.owner.query('select count(*)::int as n from records')).rows[0].n;
    const before = await records();
    const answers: string[] = [];
    for (const { template, method, bytes } of writes) {
      // A route that takes bytes refuses any JSON body as such.
      const expected = bytes ? '415 UNSUPPORTED_MEDIA_TYPE undefined' : '422 VALIDATION_FAILED nested.n.1';
      for (const number of ['1e400', '-1e400']) {
        const res = await sendJson(template, method, `{"title":"x","nested":{"n":[1,${number}]}}`);
        const answer = `${res.status} ${res.code} ${res.errors?.[0]?.path}`;
        if (answer !== expected) answers.push(`${method.toUpperCase()} ${template} ${number} → ${answer}`);
      }
    }
    expect(answers).toEqual([]);
    expect(await records()).toBe(before);
  });

  // Last: without its check, a route that ignored the body would run (logout would end the session).
  it('refuses a field it does not know in any JSON body with 422, on every write route', async () => {
    const writes = writeRoutes().filter((w) => !w.bytes);
    expect(writes.length).toBeGreaterThan(20);
    const answers: string[] = [];
    for (const { template, method } of writes) {
      const res = await sendJson(template, method, '{"surelyNotAField":1}');
      if (res.status !== 422 || res.code !== 'VALIDATION_FAILED')
        answers.push(`${method.toUpperCase()} ${template} → ${res.status} ${res.code}`);
    }
    expect(answers).toEqual([]);
  });
});
