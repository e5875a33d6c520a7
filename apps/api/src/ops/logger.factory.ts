import type { LoggerService } from '@nestjs/common';
import type { OutboxLogger } from '@listing/outbox';
import pino, { type Logger, type LoggerOptions } from 'pino';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * Where secrets can appear in a log line. pino's redaction is path based, so this lists the
 * request headers and the field names our code and libraries use for credentials; the
 * `*.`-prefixed forms catch them one level down (e.g. `body.password`, `err.config.headers`).
 */
const SECRET_FIELDS = [
  'authorization',
  'cookie',
  'set-cookie',
  'password',
  'token',
  'accessToken',
  'refreshToken',
  'apiKey',
  'apiSecret',
  'secret',
  'credentials',
  'clientSecret',
];
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((f) => `*.${f}`),
  ...SECRET_FIELDS.map((f) => `*.*.${f}`),
];

/** One JSON object per line; `level` as a label and `time` as ISO so humans and Loki can read it. */
export function loggerOptions(role: string, level: LogLevel): LoggerOptions {
  return {
    level,
    base: { role, pid: process.pid },
    messageKey: 'msg',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
  };
}

/**
 * Synchronous stdout, not pino's asynchronous default: with an asynchronous write still in flight
 * at process.exit(), pino's exit hook calls sonic-boom's flushSync, which retries a broken pipe
 * (EPIPE: the log reader died first) forever, so the process never exits. Written synchronously, a
 * broken pipe is seen on the write that hits it and pino turns logging off instead. A log line is
 * one write(2) of a few hundred bytes; the processes log per request or per failure, not per event.
 */
export function createLogger(role: string, level: LogLevel = 'info'): Logger {
  return pino(loggerOptions(role, level), pino.destination({ dest: 1, sync: true }));
}

/** LOG_LEVEL of the processes that do not parse the API configuration (dispatcher, worker). */
export function logLevelFromEnv(env: NodeJS.ProcessEnv = process.env): LogLevel {
  const value = env.LOG_LEVEL ?? 'info';
  const levels: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  return (levels as string[]).includes(value) ? (value as LogLevel) : 'info';
}

/** The outbox engine's small logger interface on top of pino (dispatcher and worker processes). */
export function outboxLogger(logger: Logger): OutboxLogger & { pino: Logger } {
  return {
    pino: logger,
    info: (msg, fields) => logger.info(fields ?? {}, msg),
    warn: (msg, fields) => logger.warn(fields ?? {}, msg),
    error: (msg, fields) => logger.error(fields ?? {}, msg),
  };
}

/** Nest's LoggerService on pino, so framework messages are JSON lines like everything else. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}
  log(message: unknown, context?: string) {
    this.logger.info(...line(message, context));
  }
  error(message: unknown, _trace?: string, context?: string) {
    // Stack traces stay out: they can carry SQL fragments or values.
    this.logger.error(...line(message, context));
  }
  warn(message: unknown, context?: string) {
    this.logger.warn(...line(message, context));
  }
  debug(message: unknown, context?: string) {
    this.logger.debug(...line(message, context));
  }
  verbose(message: unknown, context?: string) {
    this.logger.trace(...line(message, context));
  }
}

/**
 * Nest's `Logger.log({ msg: 'text', ...fields })` (our own structured calls: ids and codes) becomes
 * one pino line with those fields; anything else, Nest's own messages and whatever a library
 * logs, is printed as text, so no foreign object's fields reach the line.
 */
function line(message: unknown, context?: string): [Record<string, unknown>, string] {
  const record = message as { msg?: unknown } | null;
  if (
    typeof record === 'object' &&
    record !== null &&
    !Array.isArray(record) &&
    typeof record.msg === 'string'
  ) {
    const { msg, ...fields } = record as Record<string, unknown>;
    return [{ ...fields, context }, msg as string];
  }
  return [{ context }, String(message)];
}
