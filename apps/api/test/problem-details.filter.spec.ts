import { NotFoundException } from '@nestjs/common';
import { answer } from './support/problem-filter';

describe('ProblemDetailsFilter', () => {
  it('a client that broke its own body stream is a 400, not "database unreachable"', () => {
    const reset = Object.assign(new Error('aborted'), { code: 'ECONNRESET', statusCode: 400 });
    const sent = answer(reset);
    expect(sent.status).toBe(400);
    expect(sent.body).toMatchObject({ code: 'BAD_REQUEST' });
    expect(sent.headers['retry-after']).toBeUndefined();
  });

  it('a database connection reset is still a 503 with Retry-After', () => {
    const sent = answer(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    expect(sent.status).toBe(503);
    expect(sent.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
    expect(sent.headers['retry-after']).toBe('1');
  });

  it("the framework's messages are never echoed (they carry the URL)", () => {
    const sent = answer(new NotFoundException('Cannot GET /v1/x?access_token=secret'));
    expect(sent.status).toBe(404);
    expect(sent.body).toEqual(expect.objectContaining({ code: 'ROUTE_NOT_FOUND', detail: 'no such route' }));
    expect(JSON.stringify(sent.body)).not.toContain('secret');
  });
});
