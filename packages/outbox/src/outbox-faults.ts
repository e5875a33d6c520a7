import { appendFileSync } from 'node:fs';
import { OutboxError } from './outbox-error';

/** Points where a test can make the process die with SIGKILL. */
export const FAULT_POINTS = ['after-business-commit', 'after-enqueue', 'after-handler-commit'] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

export interface AddTraceRecord {
  readonly id: string;
  readonly lockedUntil: Date;
}

/**
 * Test-only fault injection and tracing. Active only when NODE_ENV=test AND
 * OUTBOX_FAULTS_ENABLED=1; asking for a fault or a trace in any other environment throws at boot
 * (OUTBOX_FAULTS_REFUSED) instead of being silently ignored.
 *
 *   OUTBOX_FAULT=after-business-commit|after-enqueue|after-handler-commit   (comma-separated)
 *   OUTBOX_TRACE_FILE=/path                            one JSON line per BullMQ add accepted
 */
export class OutboxFaults {
  private constructor(
    private readonly armed: ReadonlySet<FaultPoint>,
    private readonly traceFile: string | null,
  ) {}

  static disabled(): OutboxFaults {
    return new OutboxFaults(new Set(), null);
  }

  static fromEnv(env: NodeJS.ProcessEnv = process.env): OutboxFaults {
    const requested = (env.OUTBOX_FAULT ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const traceFile = env.OUTBOX_TRACE_FILE?.trim() || null;
    if (!requested.length && !traceFile) return OutboxFaults.disabled();
    if (env.NODE_ENV !== 'test' || env.OUTBOX_FAULTS_ENABLED !== '1') {
      throw new OutboxError(
        'OUTBOX_FAULTS_REFUSED',
        'OUTBOX_FAULT / OUTBOX_TRACE_FILE are test-only: they need NODE_ENV=test and OUTBOX_FAULTS_ENABLED=1',
      );
    }
    const unknown = requested.filter((p) => !(FAULT_POINTS as readonly string[]).includes(p));
    if (unknown.length) {
      throw new OutboxError('OUTBOX_FAULTS_REFUSED', `unknown fault point(s): ${unknown.join(', ')}`);
    }
    return new OutboxFaults(new Set(requested as FaultPoint[]), traceFile);
  }

  get active(): boolean {
    return this.armed.size > 0 || this.traceFile !== null;
  }

  isArmed(point: FaultPoint): boolean {
    return this.armed.has(point);
  }

  /** Call right after a business transaction committed: dies here when armed. */
  afterBusinessCommit(): void {
    if (this.armed.has('after-business-commit')) this.crash();
  }

  /** The dispatcher calls this after BullMQ accepted a batch and before marking it. */
  afterEnqueue(): void {
    if (this.armed.has('after-enqueue')) this.crash();
  }

  /**
   * The worker calls this after a job's transaction (inbox row and effects) committed and before
   * BullMQ hears the job completed: the job's lock expires and it is delivered again.
   */
  afterHandlerCommit(): void {
    if (this.armed.has('after-handler-commit')) this.crash();
  }

  /** Records accepted adds (synchronously, so a crash right after cannot lose the record). */
  traceAdds(dispatcherId: string, events: readonly AddTraceRecord[]): void {
    if (!this.traceFile) return;
    const at = Date.now();
    const lines = events
      .map((e) => JSON.stringify({ id: e.id, by: dispatcherId, at, leaseUntil: e.lockedUntil.getTime() }))
      .join('\n');
    appendFileSync(this.traceFile, `${lines}\n`);
  }

  private crash(): never {
    process.kill(process.pid, 'SIGKILL');
    // SIGKILL to oneself is delivered at once; never run another line if it somehow is not.
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
  }
}
