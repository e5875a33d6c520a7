import { ConfigError } from '../config/app-config';
import { loadTracingConfig, type TracingConfig, type TracingRole } from '../config/tracing-config';
import type { StartedSdk } from './tracing-sdk';

/** What a role knows of its tracing after the bootstrap. */
export interface Tracing {
  readonly enabled: boolean;
  /** The exporter, when tracing is on; null when off (no SDK was loaded at all). */
  readonly exporter: StartedSdk['exporter'] | null;
  /** For the role's start-up log line. */
  readonly summary: Record<string, string>;
  /** Exports what is buffered and stops; nothing when off. */
  shutdown(): Promise<void>;
}

export type SdkLoader = () => {
  startSdk(role: TracingRole, config: TracingConfig & { enabled: true }): StartedSdk;
};

// The SDK and the instrumentations are loaded only when tracing is on: with no endpoint a role
// pays for this file and its zod schema, nothing else. Synchronous on purpose: the
// instrumentations must be in place before the entry point's next import loads pg or fastify.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const loadSdk: SdkLoader = () => require('./tracing-sdk') as ReturnType<SdkLoader>;

/**
 * Starts OpenTelemetry for a role from the OTEL_* environment (config/tracing-config.ts), or
 * does nothing when no OTLP endpoint is set. Called by the ops/tracing-<role>.ts bootstraps,
 * which each entry point imports first.
 */
export function startTracing(
  role: TracingRole,
  env: NodeJS.ProcessEnv = process.env,
  load: SdkLoader = loadSdk,
): Tracing {
  const config = loadTracingConfig(role, env);
  if (!config.enabled) {
    return {
      enabled: false,
      exporter: null,
      summary: { tracing: 'off', reason: config.reason },
      shutdown: async () => undefined,
    };
  }
  const sdk = load().startSdk(role, config);
  let stopped: Promise<void> | null = null;
  return {
    enabled: true,
    exporter: sdk.exporter,
    summary: {
      tracing: 'on',
      serviceName: config.serviceName,
      tracesUrl: config.tracesUrl,
      protocol: config.protocol,
      sampler: config.sampler,
    },
    // Never fails a stop: a collector that is gone costs the spans still buffered, nothing else.
    shutdown: () => (stopped ??= sdk.shutdown().catch(() => undefined)),
  };
}

/**
 * startTracing for an entry point's first import: a bad OTEL_* variable ends the process with
 * the configuration message, as every other invalid setting does.
 */
export function startRoleTracing(role: TracingRole): Tracing {
  try {
    return startTracing(role);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
}
