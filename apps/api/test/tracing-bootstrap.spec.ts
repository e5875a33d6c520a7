import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ConfigError } from '../src/config/app-config';
import { loadTracingConfig } from '../src/config/tracing-config';
import { startTracing, type SdkLoader } from '../src/ops/tracing';

describe('tracing bootstrap (ops/tracing.ts)', () => {
  const fakeSdk = () => {
    const shutdown = jest.fn(async () => undefined);
    const startSdk = jest.fn(() => ({
      exporter: { export: jest.fn(), shutdown: jest.fn() } as never,
      shutdown,
    }));
    const load: jest.MockedFunction<SdkLoader> = jest.fn(() => ({ startSdk }));
    return { load, startSdk, shutdown };
  };

  it('without an OTLP endpoint: off, no exporter, and the SDK module is never loaded', async () => {
    const sdk = fakeSdk();
    const tracing = startTracing(
      'api',
      { OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
      sdk.load,
    );
    expect(tracing).toMatchObject({ enabled: false, exporter: null });
    expect(tracing.summary).toEqual({ tracing: 'off', reason: 'no OTEL_EXPORTER_OTLP_ENDPOINT' });
    expect(sdk.load).not.toHaveBeenCalled();
    await tracing.shutdown(); // a no-op
  });

  it('an empty endpoint (a compose file’s `${X:-}`) is unset: off', () => {
    const sdk = fakeSdk();
    expect(
      startTracing('api', { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_SERVICE_NAME: '' }, sdk.load),
    ).toMatchObject({
      enabled: false,
    });
    expect(sdk.load).not.toHaveBeenCalled();
  });

  it('OTEL_SDK_DISABLED=true wins over an endpoint', () => {
    const sdk = fakeSdk();
    const tracing = startTracing(
      'worker',
      { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
      sdk.load,
    );
    expect(tracing).toMatchObject({ enabled: false, exporter: null });
    expect(sdk.load).not.toHaveBeenCalled();
  });

  it('with an endpoint: starts the SDK once with the role’s service name and the traces URL; shutdown flushes once', async () => {
    const sdk = fakeSdk();
    const tracing = startTracing(
      'dispatcher',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' },
      sdk.load,
    );
    expect(tracing.enabled).toBe(true);
    expect(tracing.exporter).not.toBeNull();
    expect(sdk.startSdk).toHaveBeenCalledTimes(1);
    expect(sdk.startSdk).toHaveBeenCalledWith('dispatcher', {
      enabled: true,
      serviceName: 'listing-dispatcher',
      tracesUrl: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      scheduleDelayMs: 5000,
    });
    await Promise.all([tracing.shutdown(), tracing.shutdown()]);
    expect(sdk.shutdown).toHaveBeenCalledTimes(1);
  });

  it('honours OTEL_SERVICE_NAME, the traces endpoint and the protocol', () => {
    expect(
      loadTracingConfig('api', {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector.example/otlp/traces',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'listing-api-eu',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      }),
    ).toMatchObject({
      enabled: true,
      serviceName: 'listing-api-eu',
      tracesUrl: 'https://collector.example/otlp/traces',
      protocol: 'http/json',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
    });
    expect(loadTracingConfig('worker', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toMatchObject({
      serviceName: 'listing-worker',
    });
  });

  it('lists every malformed variable at once', () => {
    let error: unknown;
    try {
      loadTracingConfig('api', {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_TRACES_SAMPLER: 'sometimes',
        OTEL_BSP_SCHEDULE_DELAY: '-1',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as ConfigError).problems.join('\n');
    for (const v of [
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_TRACES_SAMPLER',
      'OTEL_BSP_SCHEDULE_DELAY',
    ])
      expect(text).toContain(v);
    expect(() => loadTracingConfig('api', { OTEL_TRACES_SAMPLER_ARG: '0.5' })).toThrow(ConfigError);
  });

  it('the real SDK, on: an OTLP/HTTP JSON exporter to the configured URL', async () => {
    const tracing = startTracing('api', {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/v1/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    try {
      expect(tracing.enabled).toBe(true);
      expect(tracing.exporter).toBeInstanceOf(OTLPTraceExporter); // the JSON one, not -proto's
      expect(tracing.summary).toMatchObject({
        tracing: 'on',
        serviceName: 'listing-api',
        protocol: 'http/json',
      });
    } finally {
      await tracing.shutdown();
    }
  });
});
