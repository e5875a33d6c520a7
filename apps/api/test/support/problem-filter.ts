import type { ArgumentsHost } from '@nestjs/common';
import type { ErrorCatalogue } from '../../src/common/error-catalogue';
import { ProblemDetailsFilter } from '../../src/common/problem-details.filter';
import { ERROR_CODES } from '../../src/error-codes';

/** Runs the exception filter against a recording reply: the status, headers and body it sent. */
export function answer(error: unknown, errors: ErrorCatalogue = ERROR_CODES) {
  const sent: { status?: number; headers: Record<string, string>; body?: Record<string, unknown> } = {
    headers: {},
  };
  const reply = {
    code: (status: number) => (sent.status = status),
    header: (name: string, value: string) => (sent.headers[name] = value),
    send: (body: string) => (sent.body = JSON.parse(body) as Record<string, unknown>),
  };
  const host = { switchToHttp: () => ({ getResponse: () => reply }) } as unknown as ArgumentsHost;
  new ProblemDetailsFilter(errors).catch(error, host);
  return sent;
}
