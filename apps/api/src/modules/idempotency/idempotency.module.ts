import { Global, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { Database } from '@listing/db';
import {
  FINGERPRINT_KEYRING,
  FingerprintKeyring,
  IdempotencyInterceptor,
  IdempotencyService,
  idempotencyOptions,
} from '@listing/idempotency';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';
import { ApiMetrics } from '../../ops/api-metrics.service';
import { idempotencyFaultHooks } from './idempotency-faults';

/** Wires the idempotency engine (packages/idempotency) into Nest. */
@Global()
@Module({
  providers: [
    {
      provide: FINGERPRINT_KEYRING,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        FingerprintKeyring.parse(config.IDEMPOTENCY_FINGERPRINT_KEYS, config.IDEMPOTENCY_FINGERPRINT_KEY_ID),
    },
    {
      provide: IdempotencyService,
      inject: [Database, APP_CONFIG, ApiMetrics],
      useFactory: (db: Database, config: AppConfig, metrics: ApiMetrics) =>
        new IdempotencyService(
          db,
          idempotencyOptions({
            ttlSeconds: config.IDEMPOTENCY_TTL_HOURS * 3600,
            lockTimeoutMs: config.IDEMPOTENCY_LOCK_TIMEOUT_MS,
            retryAfterSeconds: config.IDEMPOTENCY_RETRY_AFTER_SECONDS,
            replayCacheSize: config.IDEMPOTENCY_REPLAY_CACHE_SIZE,
          }),
          idempotencyFaultHooks(config.TEST_FAULTS),
          metrics.observeIdempotency,
        ),
    },
    { provide: APP_INTERCEPTOR, useClass: IdempotencyInterceptor },
  ],
  exports: [IdempotencyService, FINGERPRINT_KEYRING],
})
export class IdempotencyModule {}
