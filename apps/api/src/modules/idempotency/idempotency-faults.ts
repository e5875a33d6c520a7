import type { IdempotencyHooks } from '@listing/idempotency';

/**
 * Test-only fault injection, for crash and concurrency proofs with real processes. Activated by
 * TEST_FAULTS, which config refuses unless NODE_ENV=test. Syntax: comma-separated
 * `name=action:ms`, e.g. `idempotency.after-reserve=hold:3000` (hold the reservation, then go
 * on) or `idempotency.after-reserve=fail:3000` (hold, then throw so the transaction rolls back).
 * Each activation writes `fault:<name>:<action>` to stderr so a test can act at that moment.
 */
export function idempotencyFaultHooks(spec: string | undefined): IdempotencyHooks {
  const fault = parse(spec).get('idempotency.after-reserve');
  if (!fault) return {};
  return {
    async afterReserve(operation) {
      if (fault.onlyPathContains && !operation.includes(fault.onlyPathContains)) return;
      process.stderr.write(`fault:idempotency.after-reserve:${fault.action}\n`);
      await new Promise((resolve) => setTimeout(resolve, fault.ms));
      if (fault.action === 'fail') throw new Error('injected failure after reservation');
    },
  };
}

interface Fault {
  action: 'hold' | 'fail';
  ms: number;
  onlyPathContains?: string;
}

function parse(spec: string | undefined): Map<string, Fault> {
  const faults = new Map<string, Fault>();
  for (const part of (spec ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([\w.-]+)=(hold|fail):(\d+)(?::(.+))?$/.exec(part);
    if (!m) throw new Error(`TEST_FAULTS: cannot parse "${part}"`);
    faults.set(m[1]!, { action: m[2] as Fault['action'], ms: Number(m[3]), onlyPathContains: m[4] });
  }
  return faults;
}
