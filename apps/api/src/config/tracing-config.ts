import { z } from 'zod';
import { ConfigError } from './app-config';

/** The process roles that trace (the CLI does not). */
export type TracingRole = 'api' | 'dispatcher' | 'worker';

/** Each role's service name unless OTEL_SERVICE_NAME names one. */
export const DEFAULT_SERVICE_NAMES: Record<TracingRole, string> = {
  api: 'listing-api',
  dispatcher: 'listing-dispatcher',
  worker: 'listing-worker',
};

/** The specification reads an empty value as unset (`OTEL_…=` from a compose file's `${X:-}`). */
const unsetIfEmpty = <T extends z.ZodType>(type: T) =>
  z.preprocess((value) => (value === '' ? undefined : value), type);
const url = unsetIfEmpty(z.url().optional());
const protocol = unsetIfEmpty(z.enum(['http/protobuf', 'http/json']).optional());
const samplers = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/**
 * OpenTelemetry tracing, parsed once at boot by the tracing bootstrap (ops/tracing.ts), before
 * anything else loads. The standard OTEL_* names; only OTLP over HTTP is built in. Without an
 * endpoint tracing is off: no SDK, no exporter, no instrumentation.
 */
const schema = z
  .object({
    /** `true`: off whatever else is set (the specification's kill switch). */
    OTEL_SDK_DISABLED: unsetIfEmpty(z.enum(['true', 'false']).default('false')),
    /** Collector base URL; traces go to `<it>/v1/traces`. */
    OTEL_EXPORTER_OTLP_ENDPOINT: url,
    /** The traces URL itself (wins over the base URL). */
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
    OTEL_SERVICE_NAME: unsetIfEmpty(z.string().max(200).optional()),
    OTEL_TRACES_SAMPLER: unsetIfEmpty(z.enum(samplers).default('parentbased_always_on')),
    /** The ratio of the *traceidratio samplers (0–1). */
    OTEL_TRACES_SAMPLER_ARG: unsetIfEmpty(z.coerce.number().min(0).max(1).optional()),
    /** Batch span processor: longest wait (ms) before a batch is exported. */
    OTEL_BSP_SCHEDULE_DELAY: unsetIfEmpty(z.coerce.number().int().min(1).max(600_000).default(5000)),
  })
  .superRefine((env, ctx) => {
    if (env.OTEL_TRACES_SAMPLER_ARG !== undefined && !env.OTEL_TRACES_SAMPLER.endsWith('traceidratio')) {
      ctx.addIssue({
        code: 'custom',
        path: ['OTEL_TRACES_SAMPLER_ARG'],
        message: 'only the traceidratio samplers take an argument',
      });
    }
  });

export type TracingSampler = (typeof samplers)[number];

export type TracingConfig =
  | { readonly enabled: false; readonly reason: string }
  | {
      readonly enabled: true;
      readonly serviceName: string;
      /** Where spans are POSTed (OTLP/HTTP). */
      readonly tracesUrl: string;
      readonly protocol: 'http/protobuf' | 'http/json';
      readonly sampler: TracingSampler;
      readonly samplerRatio: number;
      readonly scheduleDelayMs: number;
    };

/** `<base>/v1/traces`, as the specification derives the signal's URL from the base endpoint. */
function tracesUrlOf(base: string): string {
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

export function loadTracingConfig(role: TracingRole, env: NodeJS.ProcessEnv = process.env): TracingConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  const c = parsed.data;
  if (c.OTEL_SDK_DISABLED === 'true') return { enabled: false, reason: 'OTEL_SDK_DISABLED=true' };
  const tracesUrl =
    c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (c.OTEL_EXPORTER_OTLP_ENDPOINT ? tracesUrlOf(c.OTEL_EXPORTER_OTLP_ENDPOINT) : undefined);
  if (!tracesUrl) return { enabled: false, reason: 'no OTEL_EXPORTER_OTLP_ENDPOINT' };
  return {
    enabled: true,
    serviceName: c.OTEL_SERVICE_NAME ?? DEFAULT_SERVICE_NAMES[role],
    tracesUrl,
    protocol: c.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? c.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    sampler: c.OTEL_TRACES_SAMPLER,
    samplerRatio: c.OTEL_TRACES_SAMPLER_ARG ?? 1,
    scheduleDelayMs: c.OTEL_BSP_SCHEDULE_DELAY,
  };
}
