import 'reflect-metadata';
import type { IncomingMessage } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { LogController } from 'fastify';
import { AppModule } from './app.module';
import { registerRawImageBodyParser } from './modules/media/raw-image-body.parser';
import { ProblemDetailsFilter } from './common/problem-details.filter';
import type { AppConfig } from './config/app-config';
import { installHttpOps, requestId } from './ops/http-ops.installer';
import { PinoNestLogger, createLogger } from './ops/logger.factory';
import { loadApiOpsConfig, type ApiOpsConfig } from './ops/ops-config';

/**
 * Builds the HTTP application; used by main.ts and by tests that run the API in-process.
 * Signal handling lives in main.ts (ops/api-shutdown.ts), so in-process tests own the lifecycle.
 */
export async function createApp(
  config: AppConfig,
  ops: ApiOpsConfig = loadApiOpsConfig(),
): Promise<NestFastifyApplication> {
  const logger = createLogger('api', config.LOG_LEVEL);
  const trusted = config.TRUST_PROXY;
  const adapter = new FastifyAdapter({
    bodyLimit: config.BODY_LIMIT_BYTES,
    // A hop count as proxy-addr's trust function (the adapter's type has no number form).
    trustProxy: typeof trusted === 'number' ? (_address: string, hop: number) => hop < trusted : trusted,
    loggerInstance: logger,
    // One line per request is written by the ops hooks (with route, workspace and user).
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: (request: IncomingMessage) => requestId(request.headers['x-request-id']),
  });
  registerRawImageBodyParser(adapter); // media content uploads (raw bytes)
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    logger: new PinoNestLogger(logger.child({ context: 'nest' })),
  });
  app.useGlobalFilters(new ProblemDetailsFilter());
  await installHttpOps(app, config, ops, logger);
  return app;
}
