import 'reflect-metadata';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { LogController, type FastifyError, type FastifyReply } from 'fastify';
import { AppModule } from './app.module';
import { registerRequestBodyParsers } from './common/request-body.parsers';
import { AuthGuard } from './modules/auth/auth.guard';
import {
  PROBLEM_JSON,
  ProblemDetailsFilter,
  problemOf,
  statusProblem,
} from './common/problem-details.filter';
import type { AppConfig } from './config/app-config';
import { ERROR_CODES } from './error-codes';
import { FAILURE_CODES } from './failure-codes';
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
    // Requests that arrive while closing get a problem+json 503 from the ops hooks instead.
    return503OnClosing: false,
    // A hop count as proxy-addr's trust function (the adapter's type has no number form).
    trustProxy: typeof trusted === 'number' ? (_address: string, hop: number) => hop < trusted : trusted,
    loggerInstance: logger,
    // One line per request is written by the ops hooks (with route, workspace and user).
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: (request: IncomingMessage) => requestId(request.headers['x-request-id']),
    // Refusals before routing (a URL that is not valid percent-encoding): Fastify's own answer
    // would be plain JSON echoing the URL, query string and any token in it included.
    frameworkErrors: (error: FastifyError, _request: unknown, reply: FastifyReply) => {
      const { code, detail } = statusProblem(error.statusCode ?? 500);
      const problem = problemOf(code, detail);
      void reply.code(problem.status).type(PROBLEM_JSON).send(JSON.stringify(problem));
    },
    // Unparsable HTTP (a broken header line, headers too large): Node's error carries the raw
    // bytes (Authorization included), so only its code is logged, and the answer is problem+json.
    clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => {
      logger.debug({ code: error.code }, 'unparsable HTTP request');
      // As Node's own handler: never write into a response already under way on this socket.
      const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
        socket.destroy();
        return;
      }
      const status =
        error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const { code, detail } = statusProblem(status);
      const body = JSON.stringify(problemOf(code, detail));
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${PROBLEM_JSON}\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
  });
  const bodies = registerRequestBodyParsers(adapter, ERROR_CODES); // JSON everywhere, raw bytes for media content only
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRole('api', config), adapter, {
    logger: new PinoNestLogger(logger.child({ context: 'nest' })),
    bodyParser: false, // request-body.parsers.ts owns them (Nest's would add form data)
  });
  const guard = app.get(AuthGuard, { strict: false });
  bodies.authenticateUpload = (authorization, workspaceId) => guard.authenticate(authorization, workspaceId);
  app.useGlobalFilters(new ProblemDetailsFilter(ERROR_CODES));
  await installHttpOps(app, config, ops, logger, ERROR_CODES, FAILURE_CODES);
  return app;
}
