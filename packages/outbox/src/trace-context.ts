import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api';

/**
 * OpenTelemetry spans of the outbox's asynchronous path, after the messaging semantic conventions
 * (operation types create → send → process; messaging.system `bullmq`, the queue as destination,
 * the event id as message id):
 *
 *   API request ── create <queue>   (PRODUCER, the writer; its context is stored with the event)
 *                   └─ send <queue>   (PRODUCER, the dispatcher's BullMQ add)
 *                       └─ process <queue>   (CONSUMER, the worker's job; the handler runs in it)
 *
 * Parent-child, not span links: each event is created by one request, sent by one add and
 * processed as one job, so every span has exactly one causal predecessor, and the conventions let
 * the creation context be the parent when a single message is processed. Parenting puts a command
 * and all its asynchronous work in one trace, the one an operator opens. Links are for fan-in (one
 * span for many messages: a batch consumer, a send covering several creation contexts); the
 * dispatcher's addBulk still gets one send span per job, so there is none here. A redelivery (an
 * expired lease, a job Redis lost) is another send under the same create span, a BullMQ retry
 * another process under the same send: both stay in the trace, late spans as far as a backend is
 * concerned.
 *
 * Only @opentelemetry/api is used: without an SDK registered (tracing off) every call here is the
 * API's no-op, and the writer and the dispatcher skip even that when there is no context to carry.
 */

/** The W3C trace context as stored with an event and carried in its job's envelope. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** A version-00 traceparent is 55 characters; later versions may append fields. */
const MAX_TRACEPARENT = 256;
/** W3C asks vendors to propagate at least 512 characters of tracestate; longer ones are dropped. */
const MAX_TRACESTATE = 512;

const tracer = trace.getTracer('@listing/outbox');

const getter: TextMapGetter<TraceCarrier> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => (key === 'traceparent' || key === 'tracestate' ? carrier[key] : undefined),
};

/** Reads a carrier out of untrusted data (a job's envelope): only short strings count. */
export function readTraceCarrier(data: unknown): TraceCarrier | null {
  if (!data || typeof data !== 'object') return null;
  const { traceparent, tracestate } = data as Record<string, unknown>;
  if (typeof traceparent !== 'string' || !traceparent || traceparent.length > MAX_TRACEPARENT) return null;
  return typeof tracestate === 'string' && tracestate && tracestate.length <= MAX_TRACESTATE
    ? { traceparent, tracestate }
    : { traceparent };
}

function carrierOf(ctx: Context): TraceCarrier | null {
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier);
  return readTraceCarrier(carrier);
}

function messagingAttributes(
  operation: 'create' | 'send' | 'process',
  message: { queue: string; type: string; id: string; workspaceId?: string | null },
): Attributes {
  return {
    'messaging.system': 'bullmq',
    'messaging.operation.type': operation,
    'messaging.operation.name': operation,
    'messaging.destination.name': message.queue,
    'messaging.message.id': message.id,
    'listing.outbox.event_type': message.type,
    ...(message.workspaceId ? { 'listing.workspace.id': message.workspaceId } : {}),
  };
}

/**
 * The writer's `create` span, under the active context (the API request's span), ended at once:
 * the INSERT itself rides with the COMMIT and shows as the pg instrumentation's span. Returns the
 * context to store with the event, or null when there is no active trace (tracing off, or an
 * append outside any traced work): then nothing is created and nothing stored.
 */
export function traceOutboxCreate(event: {
  queue: string;
  type: string;
  id: string;
  workspaceId: string;
}): TraceCarrier | null {
  const active = context.active();
  if (!trace.getSpan(active)) return null;
  const span = tracer.startSpan(
    `create ${event.queue}`,
    { kind: SpanKind.PRODUCER, attributes: messagingAttributes('create', event) },
    active,
  );
  const carrier = carrierOf(trace.setSpan(active, span));
  span.end();
  return carrier;
}

/** A started send span and the context the job carries to the worker. */
export interface SendTrace {
  /** For the job's envelope: the send span's context, or the stored one when this process does not trace. */
  readonly carrier: TraceCarrier;
  /** Runs `fn` with the send span active (the add's Redis call then nests in it). */
  within<T>(fn: () => T): T;
  end(error?: unknown): void;
}

/**
 * The dispatcher's `send` span for one event, child of the context stored with it. Null when the
 * event carries none. When this process does not trace (no SDK: the propagator is a no-op), the
 * stored context goes on to the job unchanged, so the worker still continues the request's trace.
 */
export function traceOutboxSend(event: {
  queue: string;
  type: string;
  id: string;
  workspaceId: string;
  traceparent?: string | null;
  tracestate?: string | null;
}): SendTrace | null {
  const stored = readTraceCarrier(event);
  if (!stored) return null;
  const parent = propagation.extract(ROOT_CONTEXT, stored, getter);
  const span = tracer.startSpan(
    `send ${event.queue}`,
    { kind: SpanKind.PRODUCER, attributes: messagingAttributes('send', event) },
    parent,
  );
  const active = trace.setSpan(parent, span);
  return {
    carrier: carrierOf(active) ?? stored,
    within: (fn) => context.with(active, fn),
    end: (error?: unknown) => endSpan(span, error),
  };
}

/** Outcome of a processed job, as the worker counts it. */
export type ProcessOutcome = 'completed' | 'duplicate' | 'failed' | 'postponed';

/**
 * Runs `fn` inside the worker's `process` span for one job: a child of the context in the job's
 * envelope (the send span), or the root of a new trace for a job that carries none (a system job,
 * an event appended while nothing was traced). The handler's own spans (pg, ioredis, the
 * provider's HTTP call) nest inside it. `describe` turns a thrown error into what may be recorded
 * (redacted: an error message may carry data).
 */
export async function traceOutboxProcess<T>(
  job: { queue: string; type: string; id: string; attempt: number; data: unknown },
  describe: (error: unknown) => { outcome: ProcessOutcome; message?: string },
  fn: (span: { setOutcome(outcome: ProcessOutcome): void }) => Promise<T>,
): Promise<T> {
  const stored = readTraceCarrier(job.data);
  const parent = stored ? propagation.extract(ROOT_CONTEXT, stored, getter) : ROOT_CONTEXT;
  const workspaceId = (job.data as { workspaceId?: unknown } | null)?.workspaceId;
  const attributes = messagingAttributes('process', {
    ...job,
    workspaceId: typeof workspaceId === 'string' ? workspaceId : null,
  });
  attributes['listing.outbox.attempt'] = job.attempt;
  const span = tracer.startSpan(`process ${job.queue}`, { kind: SpanKind.CONSUMER, attributes }, parent);
  let outcome: ProcessOutcome = 'completed';
  try {
    const result = await context.with(trace.setSpan(parent, span), () =>
      fn({ setOutcome: (o) => (outcome = o) }),
    );
    span.setAttribute('listing.outbox.outcome', outcome);
    span.end();
    return result;
  } catch (error) {
    const described = describe(error);
    span.setAttribute('listing.outbox.outcome', described.outcome);
    if (described.outcome === 'failed') {
      span.setStatus({ code: SpanStatusCode.ERROR, message: described.message });
      span.setAttribute('error.type', errorType(error));
    }
    span.end();
    throw error;
  }
}

function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) {
    // The type only: an add's error message may quote the job (ids, but still not for telemetry).
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.setAttribute('error.type', errorType(error));
  }
  span.end();
}

function errorType(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? code : error.name;
  }
  return '_OTHER';
}
