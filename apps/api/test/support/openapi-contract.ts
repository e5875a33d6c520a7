import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Json = Record<string, unknown>;

interface Operation {
  responses: Record<string, Json>;
}

interface Route {
  template: string;
  pattern: RegExp;
  /** Fewer parameters first: `/media/{id}/content` beats `/media/{id}` for its own path. */
  params: number;
  operations: Record<string, Operation>;
}

/** What one response must be to match the document; `check` answers the ways it is not. */
export interface ObservedResponse {
  method: string;
  /** Path and query as requested, e.g. `/v1/workspaces/…/stores?limit=5`. */
  path: string;
  status: number;
  headers: Headers;
  /** The body as text (empty for none). */
  text: string;
}

/** Only the API's own routes are in the document; the docs, metrics and admin pages are not. */
export const CONTRACT_PATHS = /^\/(v1|health)(\/|$)/;

/**
 * Checks responses against an OpenAPI 3.1 document with ajv's JSON Schema 2020-12 dialect (the
 * document's own): the status is documented for the route (or is its `default`), the content
 * type is one it lists, the body matches its schema (views admit no unknown property, problems
 * name a code the route documents), and the headers it requires are present while Location,
 * ETag, Idempotent-Replayed and Retry-After appear only where documented. A path no route has
 * must answer a problem of a catalogued code.
 */
export class OpenApiContract {
  private readonly ajv: Ajv2020;
  private readonly routes: Route[];
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(private readonly document: Json) {
    // strict off: the document carries OpenAPI keywords (examples, x-…) ajv does not know.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addFormat('binary', true);
    this.ajv.addSchema(document, 'openapi.json');
    this.routes = Object.entries(document.paths as Record<string, Record<string, Operation>>)
      .map(([template, operations]) => {
        const params = (template.match(/\{[^}]+\}/g) ?? []).length;
        const source = template
          .split(/\{[^}]+\}/)
          .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
          .join('[^/]+');
        return { template, pattern: new RegExp(`^${source}$`), params, operations };
      })
      .sort((a, b) => a.params - b.params);
  }

  check(response: ObservedResponse): string[] {
    const path = response.path.split('?')[0]!;
    const method = response.method.toLowerCase();
    const route = this.routes.find((r) => r.pattern.test(path) && r.operations[method]);
    if (!route) return this.checkUnrouted(response);
    const where = `${method.toUpperCase()} ${route.template} → ${response.status}`;
    const operation = route.operations[method]!;
    const pointer = `#/paths/${escape(route.template)}/${method}/responses`;
    const key = operation.responses[String(response.status)] ? String(response.status) : 'default';
    const documented = operation.responses[key];
    if (!documented || (key === 'default' && !this.isTransportProblem(response))) {
      return [`${where}: status not documented`];
    }
    const { value: declared, pointer: at } = this.resolve(documented, `${pointer}/${escape(key)}`);
    const problems = this.checkHeaders(declared, response).concat(this.checkBody(declared, at, response));
    return problems.map((p) => `${where}: ${p}`);
  }

  /**
   * `default` documents the HTTP layer's refusals any route can answer: only those codes, each
   * with its own status (the root `x-problem-types`), not any status at all.
   */
  private isTransportProblem(response: ObservedResponse): boolean {
    const code = (safeJson(response.text) as { code?: unknown } | undefined)?.code;
    const types = (this.document['x-problem-types'] ?? {}) as Record<string, { status: number }>;
    return typeof code === 'string' && types[code]?.status === response.status;
  }

  private checkUnrouted(response: ObservedResponse): string[] {
    const where = `${response.method} ${response.path.split('?')[0]} → ${response.status}`;
    if (response.status < 400) return [`${where}: no documented route answers this path and method`];
    const type = mediaType(response.headers);
    if (type !== 'application/problem+json') return [`${where}: not a problem (${type})`];
    return this.validate('#/components/schemas/Problem', safeJson(response.text)).map(
      (p) => `${where}: ${p}`,
    );
  }

  private checkHeaders(declared: Json, response: ObservedResponse): string[] {
    const headers = Object.fromEntries(
      Object.entries((declared.headers ?? {}) as Record<string, Json>).map(([name, header]) => [
        name.toLowerCase(),
        this.resolve(header, '').value,
      ]),
    );
    const problems: string[] = [];
    for (const [name, header] of Object.entries(headers)) {
      if (header.required === true && !response.headers.has(name)) problems.push(`header ${name} missing`);
    }
    for (const name of ['location', 'etag', 'idempotent-replayed', 'retry-after']) {
      if (response.headers.has(name) && !headers[name]) problems.push(`header ${name} not documented`);
    }
    return problems;
  }

  private checkBody(declared: Json, pointer: string, response: ObservedResponse): string[] {
    const content = declared.content as Record<string, Json> | undefined;
    if (!content) return response.text ? ['a body where none is documented'] : [];
    const type = mediaType(response.headers);
    if (!type || !content[type])
      return [`content type ${type} not documented (${Object.keys(content).join(', ')})`];
    if (!content[type]!.schema || !type.endsWith('json')) return []; // bytes: the media type says it all
    const body = safeJson(response.text);
    if (body === undefined) return ['the body is not JSON'];
    const problems = this.validate(`${pointer}/content/${escape(type)}/schema`, body);
    if (type === 'application/problem+json' && (body as Json).status !== response.status) {
      problems.push(`problem status ${String((body as Json).status)} differs from the HTTP status`);
    }
    return problems;
  }

  private validate(pointer: string, body: unknown): string[] {
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `openapi.json${pointer}` });
      this.validators.set(pointer, validate);
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).map(
      (e) => `body${e.instancePath} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`,
    );
  }

  /** Follows a `$ref` to components (responses, headers), keeping the JSON pointer for ajv. */
  private resolve(value: Json, pointer: string): { value: Json; pointer: string } {
    const ref = value.$ref;
    if (typeof ref !== 'string') return { value, pointer };
    const target = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>(
        (node, part) => (node as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')],
        this.document,
      );
    return { value: target as Json, pointer: ref.replace(/^#/, '#') };
  }
}

function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function mediaType(headers: Headers): string {
  return (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
}

function safeJson(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
}
