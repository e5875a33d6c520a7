import { RequestMethod, type INestApplicationContext, type Type } from '@nestjs/common';
import {
  GUARDS_METADATA,
  HTTP_CODE_METADATA,
  METHOD_METADATA,
  PATH_METADATA,
  ROUTE_ARGS_METADATA,
} from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import { IDEMPOTENT_ROUTE, type IdempotentRouteOptions } from '@listing/idempotency';
import { z } from 'zod';
import { entryOf, type ErrorCatalogue } from '../../common/error-catalogue';
import { problemFor } from '../../common/problem-details.filter';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { API_DOC_METADATA, type ApiDocOptions } from '../../common/api-doc.decorator';
import { apiSchemas } from '../../common/api-schemas';

// Nest's RouteParamtypes (not exported from @nestjs/common's entry point).
const PARAM_BODY = 3;
const PARAM_QUERY = 4;
const PARAM_HEADERS = 6;

type JsonObject = Record<string, unknown>;

/**
 * Problems any route can answer before it runs: the HTTP layer's own refusals. They are the
 * operations' `default` response; every other code is listed on the routes that answer it.
 */
const TRANSPORT_CODES = ['BAD_REQUEST', 'URI_TOO_LONG', 'REQUEST_TIMEOUT', 'HEADERS_TOO_LARGE'];

/**
 * OpenAPI 3.1's default dialect, stated: JSON Schema draft 2020-12 plus the OAS vocabulary
 * (z.toJSONSchema's draft-2020-12 output is valid in it). Swagger UI 5 supports this value only:
 * any other (plain 2020-12's URI included) shows a red "OpenAPI.jsonSchemaDialect field contains
 * a value different from the default ... not supported" warning under the info description.
 */
export const OAS_3_1_DIALECT = 'https://spec.openapis.org/oas/3.1/dialect/base';

/** The idempotency settings of the running application, as the root `x-idempotency` states them. */
export interface IdempotencyContract {
  header: 'Idempotency-Key';
  /** How long a key's record is kept after its first request (IDEMPOTENCY_TTL_HOURS). */
  retentionHours: number;
  /** How long a duplicate waits for a first request still running (IDEMPOTENCY_LOCK_TIMEOUT_MS). */
  lockTimeoutMs: number;
  /** The Retry-After of IDEMPOTENCY_REQUEST_IN_PROGRESS (IDEMPOTENCY_RETRY_AFTER_SECONDS). */
  retryAfterSeconds: number;
}

/** One code of the root `x-problem-types`: what its `type` URI's page says (swagger-ui.routes.ts). */
export interface ProblemTypeEntry {
  type: string;
  title: string;
  status: number;
  retryable: boolean;
  description: string;
}

export interface OpenApiOptions {
  title: string;
  version: string;
  /** Guards that mean "bearer token required". */
  authGuards: Type[];
  /** Guards that mean "may answer 429". */
  rateLimitGuards: Type[];
  /** Every code the application answers, with status and description (src/error-codes.ts). */
  errors: ErrorCatalogue;
  /** Every code a failed operation can carry, with its message (src/failure-codes.ts). */
  failures: Readonly<Record<string, string>>;
}

interface RouteArg {
  index: number;
  data?: unknown;
  pipes?: unknown[];
}

/**
 * OpenAPI 3.1 from what the routes already declare: controller and method paths, HTTP method,
 * @HttpCode, guards (bearer auth, rate limits), @Idempotent (Idempotency-Key required/optional),
 * the zod schemas of @Body/@Query pipes (z.toJSONSchema, draft 2020-12, which OpenAPI 3.1's
 * default dialect extends), @Headers('if-match'), plus @ApiDoc for what code cannot tell. Problem
 * codes, their statuses and descriptions come from the application's merged error catalogue
 * (options.errors), the table the exception filter answers from: a new code is documented the
 * day it is declared. The idempotency settings (key retention, wait bound, Retry-After) are the
 * application's own configuration (APP_CONFIG, which IdempotencyModule builds the engine from).
 */
export function buildOpenApiDocument(app: INestApplicationContext, options: OpenApiOptions): JsonObject {
  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const controller of controllersOf(app)) {
    for (const route of routesOf(controller, options)) {
      (paths[route.path] ??= {})[route.method] = route.operation;
    }
  }
  const idempotency = idempotencyContractOf(app.get<AppConfig>(APP_CONFIG, { strict: false }));
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: OAS_3_1_DIALECT,
    info: {
      title: options.title,
      version: options.version,
      description: infoDescription(options.errors, idempotency),
    },
    'x-idempotency': idempotency,
    'x-problem-types': problemTypes(options.errors),
    security: [],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: components(options.errors, options.failures),
  };
}

type IdempotencySettings = Pick<
  AppConfig,
  'IDEMPOTENCY_TTL_HOURS' | 'IDEMPOTENCY_LOCK_TIMEOUT_MS' | 'IDEMPOTENCY_RETRY_AFTER_SECONDS'
>;

function idempotencyContractOf(config: IdempotencySettings): IdempotencyContract {
  return {
    header: 'Idempotency-Key',
    retentionHours: config.IDEMPOTENCY_TTL_HOURS,
    lockTimeoutMs: config.IDEMPOTENCY_LOCK_TIMEOUT_MS,
    retryAfterSeconds: config.IDEMPOTENCY_RETRY_AFTER_SECONDS,
  };
}

/** Every catalogued code by its `type` URI's facts: what /docs/problems/{code} shows. */
function problemTypes(errors: ErrorCatalogue): Record<string, ProblemTypeEntry> {
  return Object.fromEntries(
    Object.keys(errors)
      .sort()
      .map((code) => {
        const entry = entryOf(errors, code)!;
        const { type, title, status } = problemFor(code, entry);
        return [
          code,
          { type, title, status, retryable: entry.retryable === true, description: entry.description },
        ];
      }),
  );
}

/** The root `x-problem-types` of a document buildOpenApiDocument made (an empty map otherwise). */
export function problemTypesOf(document: object): ReadonlyMap<string, ProblemTypeEntry & { code: string }> {
  const types = (document as { 'x-problem-types'?: Record<string, ProblemTypeEntry> })['x-problem-types'];
  return new Map(Object.entries(types ?? {}).map(([code, entry]) => [entry.type, { code, ...entry }]));
}

function controllersOf(app: INestApplicationContext): Type[] {
  const seen = new Set<Type>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      if (wrapper.metatype) seen.add(wrapper.metatype as Type);
    }
  }
  return [...seen];
}

function asArray<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

function joinPath(base: string, sub: string): string {
  const joined = `/${[base, sub]
    .map((p) => p.replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/')}`;
  return joined.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function* routesOf(controller: Type, options: OpenApiOptions) {
  const bases = asArray<string>(Reflect.getMetadata(PATH_METADATA, controller));
  const classGuards = asArray<Type>(Reflect.getMetadata(GUARDS_METADATA, controller));
  const tag =
    (bases[0] ?? '')
      .replace(/^v\d+\//, '')
      .split('/')
      .filter((s) => s && !s.startsWith(':'))
      .pop() ?? 'default';
  for (const name of Object.getOwnPropertyNames(controller.prototype)) {
    if (name === 'constructor') continue;
    const handler = (controller.prototype as Record<string, unknown>)[name];
    if (typeof handler !== 'function') continue;
    const subPaths = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
    const requestMethod = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
    if (subPaths === undefined || requestMethod === undefined) continue;
    const method = RequestMethod[requestMethod]!.toLowerCase();
    const guards = [...classGuards, ...asArray<Type>(Reflect.getMetadata(GUARDS_METADATA, handler))];
    const args = Object.entries(
      (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, name) ?? {}) as Record<string, RouteArg>,
    ).map(([key, arg]) => ({ type: Number(key.split(':')[0]), ...arg }));
    const doc = (Reflect.getMetadata(API_DOC_METADATA, handler) ?? {}) as ApiDocOptions;
    const idempotent = Reflect.getMetadata(IDEMPOTENT_ROUTE, handler) as IdempotentRouteOptions | undefined;
    const status =
      (Reflect.getMetadata(HTTP_CODE_METADATA, handler) as number | undefined) ??
      (requestMethod === RequestMethod.POST ? 201 : 200);
    for (const base of bases.length ? bases : ['']) {
      for (const sub of asArray(subPaths)) {
        const path = joinPath(base, sub);
        yield {
          path,
          method,
          operation: operationOf({
            controller,
            name,
            path,
            method,
            tag,
            guards,
            args,
            doc,
            idempotent,
            status,
            options,
          }),
        };
      }
    }
  }
}

interface RouteFacts {
  controller: Type;
  name: string;
  path: string;
  method: string;
  tag: string;
  guards: Type[];
  args: Array<RouteArg & { type: number }>;
  doc: ApiDocOptions;
  idempotent: IdempotentRouteOptions | undefined;
  status: number;
  options: OpenApiOptions;
}

function zodSchemaOf(arg: RouteArg): z.ZodType | undefined {
  const pipe = (arg.pipes ?? []).find(
    (p): p is ZodValidationPipe<z.ZodType> => p instanceof ZodValidationPipe,
  );
  return pipe?.schema;
}

/** The success body's schema: a reference to its component (registered with `named`). */
function componentRef(route: string, schema: z.ZodType | undefined): JsonObject {
  if (!schema) throw new Error(`${route} answers JSON but its @ApiDoc names no response schema`);
  const id = apiSchemas.get(schema)?.id;
  if (!id) throw new Error(`${route}: its response schema is not registered (common/api-schemas.ts named())`);
  return { $ref: `#/components/schemas/${id}` };
}

/**
 * Every registered answer schema as a component, with references between them. The failure
 * code, a plain string where the views declare it, becomes the enum of the failure catalogue.
 */
function answerSchemas(failures: Readonly<Record<string, string>>): Record<string, JsonObject> {
  const { schemas } = z.toJSONSchema(apiSchemas, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
    override: tidy,
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, JsonObject> };
  for (const schema of Object.values(schemas)) {
    delete schema.$schema;
    delete schema.$id;
  }
  const codes = Object.keys(failures).sort();
  schemas.OperationFailureCode = {
    type: 'string',
    enum: codes,
    'x-enum-descriptions': codes.map((code) => failures[code]),
    description: [
      'Why a failed operation failed (stable; new codes may be added in a minor version):',
      '',
      '| code | meaning |',
      '|---|---|',
      ...codes.map((code) => `| \`${code}\` | ${failures[code]} |`),
    ].join('\n'),
  };
  return schemas;
}

/**
 * Drops what z.toJSONSchema adds by default and the document says better: the regex zod checks
 * a uuid or an instant with (the `format` names it) and an int's safe-integer bounds.
 */
function tidy({ jsonSchema: s }: { jsonSchema: JsonObject }): void {
  if (s.format === 'uuid' || s.format === 'date-time') delete s.pattern;
  if (s.type === 'integer') {
    if (s.minimum === Number.MIN_SAFE_INTEGER) delete s.minimum;
    if (s.maximum === Number.MAX_SAFE_INTEGER) delete s.maximum;
  }
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
  const out = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    override: tidy,
  }) as JsonObject;
  delete out.$schema;
  return out;
}

function operationOf(r: RouteFacts): JsonObject {
  const authenticated = r.guards.some((g) => r.options.authGuards.includes(g));
  const rateLimited = r.guards.some((g) => r.options.rateLimitGuards.includes(g));
  const parameters: JsonObject[] = [];
  const codes = new Set<string>(['INTERNAL_ERROR']);
  const write = !['get', 'head', 'options'].includes(r.method);
  // Every API route reads PostgreSQL: unreachable → 503, a stored row failing its check → 500.
  if (r.path.startsWith('/v1/')) for (const c of ['SERVICE_UNAVAILABLE', 'INTEGRITY_VIOLATION']) codes.add(c);

  for (const [, param] of r.path.matchAll(/\{([A-Za-z0-9_]+)\}/g)) {
    const declared = r.doc.pathParams?.[param!];
    parameters.push({
      name: param,
      in: 'path',
      required: true,
      schema: declared
        ? jsonSchema(declared, 'input')
        : /Id$/.test(param!)
          ? { type: 'string', format: 'uuid' }
          : param === 'revision'
            ? { type: 'integer', minimum: 1 }
            : { type: 'string' },
    });
    codes.add(param === 'workspaceId' ? 'WORKSPACE_NOT_FOUND' : 'RESOURCE_NOT_FOUND');
  }
  let requestBody: JsonObject | undefined;
  for (const arg of r.args) {
    const schema = arg.type === PARAM_BODY || arg.type === PARAM_QUERY ? zodSchemaOf(arg) : undefined;
    if (arg.type === PARAM_BODY && schema) {
      const body = jsonSchema(schema, 'input');
      requestBody = {
        required: !schema.safeParse(undefined).success,
        content: { 'application/json': { schema: body } },
      };
      for (const c of ['VALIDATION_FAILED', 'INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'])
        codes.add(c);
    }
    if (arg.type === PARAM_QUERY && schema) {
      const query = jsonSchema(schema, 'input') as {
        properties?: Record<string, JsonObject>;
        required?: string[];
      };
      for (const [name, prop] of Object.entries(query.properties ?? {})) {
        parameters.push({
          name,
          in: 'query',
          required: query.required?.includes(name) ?? false,
          schema: prop,
        });
      }
      codes.add('VALIDATION_FAILED');
    }
    if (arg.type === PARAM_HEADERS && String(arg.data).toLowerCase() === 'if-match') {
      parameters.push({
        $ref:
          r.doc.ifMatch === 'required'
            ? '#/components/parameters/IfMatchRequired'
            : '#/components/parameters/IfMatch',
      });
      for (const c of ['REVISION_MISMATCH', 'IF_MATCH_INVALID']) codes.add(c);
      if (r.doc.ifMatch === 'required') codes.add('IF_MATCH_REQUIRED');
    }
  }
  if (r.doc.upload) {
    // Raw bytes: Swagger UI offers a file picker for a binary string.
    requestBody = {
      required: true,
      content: Object.fromEntries(
        r.doc.upload.contentTypes.map((type) => [type, { schema: { type: 'string', format: 'binary' } }]),
      ),
    };
    for (const c of ['PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE']) codes.add(c);
  }
  if (r.doc.download) parameters.push({ $ref: '#/components/parameters/IfNoneMatch' });
  if (r.idempotent) {
    parameters.push({
      $ref: r.idempotent.required
        ? '#/components/parameters/IdempotencyKeyRequired'
        : '#/components/parameters/IdempotencyKey',
    });
    for (const c of [
      'IDEMPOTENCY_KEY_INVALID',
      'IDEMPOTENCY_SCOPE_CONFLICT',
      'IDEMPOTENCY_KEY_REUSED',
      'IDEMPOTENCY_REQUEST_IN_PROGRESS',
      'IDEMPOTENCY_REPLAY_UNAVAILABLE',
      'IDEMPOTENCY_RECORD_LOST',
    ])
      codes.add(c);
    if (r.idempotent.required) codes.add('IDEMPOTENCY_KEY_REQUIRED');
  }
  if (authenticated) codes.add('UNAUTHENTICATED');
  if (rateLimited) codes.add('RATE_LIMITED');
  if (write) {
    codes.add('CONCURRENT_UPDATE');
    // A body sent to any write route is parsed (and refused) before the route runs.
    for (const c of ['VALIDATION_FAILED', 'INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'])
      codes.add(c);
  }
  for (const c of r.doc.problems ?? []) codes.add(c);

  const successHeaders: JsonObject = {};
  if (r.doc.etag) successHeaders.ETag = { $ref: '#/components/headers/ETag' };
  if (r.doc.download) successHeaders.ETag = { $ref: '#/components/headers/ContentETag' };
  if (r.idempotent)
    successHeaders['Idempotent-Replayed'] = { $ref: '#/components/headers/IdempotentReplayed' };
  if (r.status === 201) successHeaders.Location = { $ref: '#/components/headers/Location' };
  if (r.status === 202) successHeaders.Location = { $ref: '#/components/headers/OperationLocation' };

  const responses: Record<string, JsonObject> = {};
  const route = `${r.method.toUpperCase()} ${r.path}`;
  if (r.status === 204) {
    if (r.doc.response) throw new Error(`${route} answers 204 (no body) but documents a response body`);
    responses['204'] = { description: 'Done (no body)' };
  } else {
    const success: JsonObject = {
      description:
        r.status === 202
          ? 'Accepted: the work continues asynchronously; poll the operation at Location'
          : r.idempotent
            ? 'Success (a replay answers the same status and body)'
            : 'Success',
      ...(Object.keys(successHeaders).length ? { headers: successHeaders } : {}),
      content: r.doc.download
        ? // Raw bytes: OpenAPI 3.1 describes them by their media type alone, without a schema.
          Object.fromEntries(r.doc.download.contentTypes.map((type) => [type, {}]))
        : { 'application/json': { schema: componentRef(route, r.doc.response) } },
    };
    responses[String(r.status)] = success;
    for (const status of r.doc.alsoAnswers ?? []) {
      responses[String(status)] = { ...success, description: `The same body, with status ${status}` };
    }
    if (r.doc.download) {
      responses['304'] = {
        description: 'Not modified: If-None-Match names the current ETag (no body)',
        headers: { ETag: { $ref: '#/components/headers/ContentETag' } },
      };
    }
  }
  const byStatus = new Map<number, string[]>();
  for (const code of [...codes].sort()) {
    const entry = entryOf(r.options.errors, code);
    if (!entry) throw new Error(`@ApiDoc problem ${code} is in no error catalogue (src/error-codes.ts)`);
    byStatus.set(entry.status, [...(byStatus.get(entry.status) ?? []), code]);
  }
  for (const [status, list] of [...byStatus.entries()].sort(([a], [b]) => a - b)) {
    if (responses[String(status)]) throw new Error(`${route}: status ${status} is both a body and a problem`);
    responses[String(status)] = problemResponse(list, r.options.errors);
  }
  responses.default = { $ref: '#/components/responses/TransportProblem' };

  const description = [
    r.doc.description,
    r.idempotent
      ? r.idempotent.required
        ? '**Idempotency-Key required.** Retries with the same key replay the first result.'
        : '**Idempotency-Key accepted** (optional): when sent, retries with the same key replay the first result.'
      : write
        ? 'Does not use Idempotency-Key (the header is ignored).'
        : undefined,
    r.doc.ifMatch === 'required'
      ? '**If-Match required**: the ETag of the revision being changed.'
      : undefined,
  ]
    .filter(Boolean)
    .join('\n\n');
  return {
    operationId: `${r.controller.name.replace(/Controller$/, '')}_${r.name}`,
    tags: [r.tag],
    ...(r.doc.summary ? { summary: r.doc.summary } : {}),
    ...(description ? { description } : {}),
    ...(authenticated ? { security: [{ bearer: [] }] } : {}),
    ...(r.idempotent
      ? {
          'x-idempotency': {
            required: r.idempotent.required,
            fingerprintHeaders: r.idempotent.meaningHeaders ?? ['if-match'],
          },
        }
      : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

/** The codes of one status; each has an example body of its own (code, status, description). */
/** The codes whose answer carries `Retry-After` (ProblemDetailsFilter sets it). */
const RETRY_AFTER_CODES = [
  'IDEMPOTENCY_REQUEST_IN_PROGRESS',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
  'CONCURRENT_UPDATE',
];

function problemResponse(codes: string[], errors: ErrorCatalogue, description?: string): JsonObject {
  const retryAfter = codes.filter((c) => RETRY_AFTER_CODES.includes(c));
  return {
    description: description ? `${description}: ${codes.join(', ')}` : `Problem: ${codes.join(', ')}`,
    ...(retryAfter.length
      ? {
          headers: {
            'Retry-After': {
              $ref: '#/components/headers/RetryAfter',
              description: `Sent with ${retryAfter.join(', ')}`,
            },
          },
        }
      : {}),
    content: {
      'application/problem+json': {
        schema: {
          allOf: [{ $ref: '#/components/schemas/Problem' }, { properties: { code: { enum: codes } } }],
        },
        examples: Object.fromEntries(
          codes.map((code) => {
            const entry = entryOf(errors, code)!;
            return [code, { summary: entry.description, value: problemFor(code, entry, entry.description) }];
          }),
        ),
      },
    },
  };
}

function infoDescription(errors: ErrorCatalogue, idempotency: IdempotencyContract): string {
  const rows = Object.entries(errors)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([code, { status, retryable, description }]) =>
        `| \`${code}\` | ${status} | ${retryable ? 'yes' : 'no'} | ${description.replace(/\|/g, '\\|')} |`,
    );
  return [
    'Multi-tenant listing API.',
    '',
    '**Authentication**: `Authorization: Bearer <access token>` from `POST /v1/auth/login` or `/v1/auth/register`.',
    '',
    `**Idempotency-Key** (a UUID): on routes marked with it, the same key, user and workspace run the request at most once; every retry returns the first status and body with \`Idempotent-Replayed: true\`. A key is kept ${idempotency.retentionHours} h after its first request (a replay does not extend it; after that the key is new again). Another body with the same key → 409 \`IDEMPOTENCY_KEY_REUSED\`; another route → 409 \`IDEMPOTENCY_SCOPE_CONFLICT\`; a duplicate of a request still running waits up to ${idempotency.lockTimeoutMs} ms for it, then → 409 \`IDEMPOTENCY_REQUEST_IN_PROGRESS\` with \`Retry-After: ${idempotency.retryAfterSeconds}\`. Failures are never cached. The same figures, machine-readable: the root \`x-idempotency\`.`,
    '',
    '**Optimistic concurrency**: revisioned resources answer an `ETag` (the revision, e.g. `"3"`); send it back in `If-Match`. Stale → 412 `REVISION_MISMATCH`; missing where required → 428 `IF_MATCH_REQUIRED`.',
    '',
    '**Asynchronous work (202 + operation)**: a route that starts work it cannot finish within the request answers `202 Accepted` with an `Operation` body and `Location: /v1/workspaces/{workspaceId}/operations/{operationId}`; poll that URL until `status` is `succeeded` or `failed`. Replaying the request with the same Idempotency-Key returns the same operation.',
    '',
    '**Errors** are `application/problem+json` (RFC 9457) with a stable `code`. Their `type` is a reference relative to the API, `/docs/problems/{code-in-kebab-case}` (e.g. [`/docs/problems/route-not-found`](/docs/problems/route-not-found)), to a page that describes the code; the root `x-problem-types` maps every code to it:',
    '',
    '| code | status | retryable | meaning |',
    '| --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

function components(errors: ErrorCatalogue, failures: Readonly<Record<string, string>>): JsonObject {
  const codes = Object.keys(errors).sort();
  return {
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', description: 'Opaque access token from /v1/auth/login' },
    },
    parameters: {
      IdempotencyKey: {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description:
          'A UUID (the RFC 8941 quoted form is accepted). Optional on this route; honoured when sent.',
        schema: { type: 'string', format: 'uuid' },
      },
      IdempotencyKeyRequired: {
        name: 'Idempotency-Key',
        in: 'header',
        required: true,
        description: 'A UUID. Required: without it the route answers 400 IDEMPOTENCY_KEY_REQUIRED.',
        schema: { type: 'string', format: 'uuid' },
      },
      IfMatch: {
        name: 'If-Match',
        in: 'header',
        required: false,
        description: 'The ETag of the revision the change is based on; stale → 412.',
        schema: { type: 'string', examples: ['"3"'] },
      },
      IfNoneMatch: {
        name: 'If-None-Match',
        in: 'header',
        required: false,
        description: 'An ETag this client holds (or `*`): when it is the current one, the answer is 304.',
        schema: { type: 'string' },
      },
      IfMatchRequired: {
        name: 'If-Match',
        in: 'header',
        required: true,
        description: 'The ETag of the revision the change is based on; missing → 428, stale → 412.',
        schema: { type: 'string', examples: ['"3"'] },
      },
    },
    headers: {
      ETag: {
        description: 'Strong entity tag of the revision, e.g. "3"',
        required: true,
        schema: { type: 'string' },
      },
      ContentETag: {
        description: 'Strong entity tag of the bytes: their SHA-256 in hex, quoted',
        required: true,
        schema: { type: 'string' },
      },
      IdempotentReplayed: {
        description: '`true` when this answer is a replay of the first request with the same Idempotency-Key',
        schema: { type: 'string', enum: ['true'] },
      },
      Location: { description: 'URL of the created resource', required: true, schema: { type: 'string' } },
      OperationLocation: {
        description: 'URL of the operation to poll: /v1/workspaces/{workspaceId}/operations/{operationId}',
        required: true,
        schema: { type: 'string' },
      },
      RetryAfter: { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
    },
    responses: {
      TransportProblem: problemResponse(
        TRANSPORT_CODES,
        errors,
        'Refused by the HTTP layer before the route ran',
      ),
    },
    schemas: {
      ProblemCode: { type: 'string', enum: codes, description: 'Every code the API answers' },
      Problem: {
        type: 'object',
        required: ['type', 'title', 'status', 'code'],
        properties: {
          type: {
            type: 'string',
            format: 'uri-reference',
            description:
              "The code's page on this API, `/docs/problems/{code-in-kebab-case}` (resolve it against the request URI)",
          },
          title: { type: 'string' },
          status: { type: 'integer' },
          code: { $ref: '#/components/schemas/ProblemCode' },
          detail: { type: 'string' },
          retryable: { type: 'boolean', description: 'Present and true when retrying later can succeed' },
        },
        additionalProperties: true,
      },
      ...answerSchemas(failures),
    },
  };
}
