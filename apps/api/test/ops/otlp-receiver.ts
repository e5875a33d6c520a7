import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** OTLP span kinds (opentelemetry/proto/trace/v1/trace.proto). */
export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Record<string, string | number | boolean>;
  readonly links: ReadonlyArray<{ traceId: string; spanId: string }>;
  readonly startNs: bigint;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  attributes?: OtlpKeyValue[];
  links?: Array<{ traceId: string; spanId: string }>;
}
interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}

function attributes(list: OtlpKeyValue[] = []): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list) {
    const v = value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue;
    if (v !== undefined) out[key] = typeof v === 'string' && value.intValue !== undefined ? Number(v) : v;
  }
  return out;
}

/**
 * An OTLP/HTTP trace receiver for tests: POST /v1/traces with the JSON encoding
 * (OTEL_EXPORTER_OTLP_PROTOCOL=http/json), every span kept with its resource's service.name.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every export request's body as received, for scans of the whole text (secrets). */
  readonly bodies: string[] = [];
  /** Export requests received (a request with no spans counts too). */
  requests = 0;
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        this.requests++;
        const text = Buffer.concat(chunks).toString('utf8');
        this.bodies.push(text);
        try {
          this.add(JSON.parse(text) as OtlpExport);
        } catch {
          res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  private add(body: OtlpExport): void {
    for (const rs of body.resourceSpans ?? []) {
      const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.spans.push({
            service,
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            name: s.name,
            kind: s.kind,
            attributes: attributes(s.attributes),
            links: s.links ?? [],
            startNs: BigInt(s.startTimeUnixNano),
          });
        }
      }
    }
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The spans of one trace as an indented tree (service, kind, name), children by start time. */
export function renderTrace(spans: readonly ReceivedSpan[]): string {
  const kinds = Object.fromEntries(Object.entries(SPAN_KIND).map(([k, v]) => [v, k]));
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string, ReceivedSpan[]>();
  for (const s of spans) {
    const parent = ids.has(s.parentSpanId) ? s.parentSpanId : '';
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const lines: string[] = [];
  const walk = (parent: string, depth: number) => {
    const list = [...(children.get(parent) ?? [])].sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
    for (const s of list) {
      lines.push(`${'  '.repeat(depth)}${s.name}  [${s.service}, ${kinds[s.kind] ?? s.kind}]`);
      walk(s.spanId, depth + 1);
    }
  };
  walk('', 0);
  return lines.join('\n');
}

/** True when `ancestor` is `span` itself or one of its parents within `spans`. */
export function descendsFrom(
  spans: readonly ReceivedSpan[],
  span: ReceivedSpan,
  ancestor: ReceivedSpan,
): boolean {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  for (let s: ReceivedSpan | undefined = span; s; s = byId.get(s.parentSpanId)) {
    if (s.spanId === ancestor.spanId) return true;
  }
  return false;
}
