import { randomUUID } from 'node:crypto';
import {
  failedJobEvent,
  newerEnvelopeVersion,
  readFailedEnvelope,
  readJobEnvelope,
} from '../src/job-envelope';

const ws = randomUUID();
const id = randomUUID();
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const JAN_2 = Date.UTC(2026, 0, 2);

describe('job envelopes', () => {
  it('reads this version strictly, its trace context leniently', () => {
    const data = { v: 1, workspaceId: ws, payload: { a: 1 }, createdAt: JAN_2, traceparent: TRACEPARENT };
    expect(readJobEnvelope(data)).toEqual(data);
    expect(readJobEnvelope({ ...data, traceparent: 42 })).toEqual({ ...data, traceparent: undefined });
    for (const damaged of [
      { ...data, v: 2 },
      { ...data, workspaceId: 'w' },
      { ...data, payload: [] },
      { ...data, createdAt: 1e300 }, // no timestamptz: a dead letter could not be written with it
      { ...data, createdAt: Date.parse('+010000-01-01T00:00:00Z') },
    ]) {
      expect(readJobEnvelope(damaged)).toBeNull();
    }
  });

  it('tells a later envelope version from a damaged one', () => {
    expect(newerEnvelopeVersion({ v: 2 })).toBe(2);
    for (const data of [{ v: 1 }, { v: 0 }, { v: '2' }, { v: 1.5 }, {}, null, 'v2']) {
      expect(newerEnvelopeVersion(data)).toBeNull();
    }
  });

  it('reads a failed job as far as it can, and only an event’s job', () => {
    const job = (data: unknown, jobId: string = id) => ({ id: jobId, data, timestamp: JAN_2 });
    const v2 = { v: 2, workspaceId: ws, body: { a: 1 }, createdAt: JAN_2 + 1 };
    expect(readFailedEnvelope(job(v2))).toEqual({ v: 1, workspaceId: ws, payload: {}, createdAt: JAN_2 + 1 });
    expect(readFailedEnvelope(job({ workspaceId: ws, payload: { a: 1 }, createdAt: 1e300 }))).toMatchObject({
      payload: { a: 1 },
      createdAt: JAN_2, // the job's own time, for want of a writable one
    });
    const beforeNow = Date.now();
    expect(
      readFailedEnvelope({ id, data: { workspaceId: ws }, timestamp: Number.NaN })!.createdAt,
    ).toBeGreaterThanOrEqual(beforeNow);
    // A system job (no event id) or a job naming no workspace: nothing to dead-letter.
    expect(readFailedEnvelope(job(v2, 'outbox-retention'))).toBeNull();
    expect(readFailedEnvelope({ id: null, data: v2, timestamp: JAN_2 })).toBeNull();
    expect(readFailedEnvelope(job({ v: 2, body: {} }))).toBeNull();
  });

  it('keeps what it records within the columns it is written to', () => {
    const envelope = readFailedEnvelope({ id, data: { workspaceId: ws }, timestamp: JAN_2 })!;
    const job = { id, queue: 'q', type: 't', maxAttempts: 1e12 };
    expect(failedJobEvent(job, envelope, 3e12, 'e')).toMatchObject({
      attempts: 1_000_000,
      maxAttempts: 1_000_000,
    });
    expect(failedJobEvent({ ...job, maxAttempts: undefined }, envelope, Number.NaN, 'e')).toMatchObject({
      attempts: 1,
      maxAttempts: 1,
      createdAt: new Date(JAN_2),
      traceparent: null,
    });
  });
});
