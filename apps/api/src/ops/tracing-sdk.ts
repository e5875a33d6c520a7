import type { IncomingMessage } from 'node:http';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { TracingConfig, TracingRole } from '../config/tracing-config';

type EnabledConfig = Extract<TracingConfig, { enabled: true }>;

/** Probes and scrapes are not worth a trace each (api, dispatcher and worker ops listeners). */
const UNTRACED_PATHS = /^\/(?:health(?:\/|$)|metrics(?:$|\?))/;

function sampler(config: EnabledConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.samplerRatio);
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

export interface StartedSdk {
  readonly exporter: SpanExporter;
  /** Exports what is buffered, then stops (SIGTERM paths). */
  shutdown(): Promise<void>;
}

/**
 * The OpenTelemetry Node SDK of one role: a tracer provider (AsyncLocalStorage context, W3C
 * traceparent/tracestate and baggage propagation) exporting in batches over OTLP/HTTP, and the
 * instrumentations, which patch their modules as they are first required: this must run before
 * anything loads pg, ioredis, http or fastify (see ops/tracing.ts).
 *
 * What is recorded, and what is not: no request or response headers or bodies (the
 * instrumentations' defaults, not widened here), SQL text without parameter values, Redis
 * command names without arguments (BullMQ's scripts carry job data, the rate limiter's keys carry
 * client addresses and emails). pg and ioredis spans only inside a trace (requireParentSpan): the
 * dispatcher's polling and the workers' blocking reads would otherwise be a trace each, all day.
 */
export function startSdk(role: TracingRole, config: EnabledConfig): StartedSdk {
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector, hostDetector] }))
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, 'listing.role': role }));
  // Headers, timeout and compression: the exporter reads OTEL_EXPORTER_OTLP_(TRACES_)HEADERS etc.
  const exporter =
    config.protocol === 'http/json'
      ? new OtlpJsonExporter({ url: config.tracesUrl })
      : new OtlpProtobufExporter({ url: config.tracesUrl });
  const provider = new NodeTracerProvider({
    resource,
    sampler: sampler(config),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.scheduleDelayMs })],
  });
  provider.register();
  const ignoreIncoming = (request: IncomingMessage) => UNTRACED_PATHS.test(request.url ?? '');
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: ignoreIncoming }),
      // Node's fetch (the platform client): the marketplace and AI vendor calls.
      new UndiciInstrumentation(),
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
      // Route and handler spans inside the HTTP server span (instrumentation-http's), which it
      // names after the route template. Not every hook of every plugin: one span each.
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        instrumentHooks: false,
        ignorePaths: (route: { url: string }) => UNTRACED_PATHS.test(route.url),
      }),
    ],
  });
  return { exporter, shutdown: () => provider.shutdown() };
}
