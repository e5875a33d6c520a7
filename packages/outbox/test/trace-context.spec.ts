import {
  readTraceCarrier,
  traceOutboxCreate,
  traceOutboxProcess,
  traceOutboxSend,
} from '../src/trace-context';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const event = {
  id: '0190d4a0-0000-7000-8000-000000000001',
  workspaceId: '0190d4a0-0000-7000-8000-000000000002',
};

/** Without an OpenTelemetry SDK registered (tracing off): what the outbox does with trace context. */
describe('trace context of outbox events, tracing off', () => {
  it('the writer stores nothing: there is no active trace', () => {
    expect(traceOutboxCreate({ ...event, queue: 'media', type: 'media.process' })).toBeNull();
  });

  it('the dispatcher passes a stored context on to the job unchanged, and an event without one gets none', () => {
    const send = traceOutboxSend({
      ...event,
      queue: 'media',
      type: 'media.process',
      traceparent: TRACEPARENT,
      tracestate: 'k=v',
    });
    expect(send?.carrier).toEqual({ traceparent: TRACEPARENT, tracestate: 'k=v' });
    send?.end();
    expect(
      traceOutboxSend({ ...event, queue: 'media', type: 'media.process', traceparent: null }),
    ).toBeNull();
  });

  it('the worker runs the handler and passes its result and errors through', async () => {
    const job = {
      queue: 'media',
      type: 'media.process',
      id: event.id,
      attempt: 1,
      data: { traceparent: TRACEPARENT },
    };
    await expect(
      traceOutboxProcess(
        job,
        () => ({ outcome: 'failed' }),
        async () => 42,
      ),
    ).resolves.toBe(42);
    const boom = new Error('boom');
    await expect(
      traceOutboxProcess(
        job,
        () => ({ outcome: 'failed' }),
        async () => {
          throw boom;
        },
      ),
    ).rejects.toBe(boom);
  });

  it('reads a carrier out of untrusted job data leniently: bad values are ignored, never an error', () => {
    expect(readTraceCarrier({ traceparent: TRACEPARENT })).toEqual({ traceparent: TRACEPARENT });
    expect(readTraceCarrier({ traceparent: TRACEPARENT, tracestate: 'x'.repeat(513) })).toEqual({
      traceparent: TRACEPARENT,
    });
    for (const data of [
      null,
      'text',
      {},
      { traceparent: 7 },
      { traceparent: '' },
      { traceparent: 'x'.repeat(257) },
    ])
      expect(readTraceCarrier(data)).toBeNull();
  });
});
