/**
 * Side-effect counters: what the simulator actually did, so tests and the chaos soak can check
 * "one product per key" and "one billing entry per key" from the provider's side.
 */
export interface FaultCounters {
  errors: number;
  timeouts: number;
  drops: number;
  delayed: number;
}

export interface CountersSnapshot {
  verifyCalls: number;
  verifyFailures: number;
  productCreateCalls: number;
  productsCreated: number;
  productsSeeded: number;
  productReplays: number;
  productConflicts: number;
  productListCalls: number;
  productCreateCallsByKey: Record<string, number>;
  productsByKey: Record<string, string>;
  aiCalls: number;
  aiReplays: number;
  aiConflicts: number;
  aiCallsByKey: Record<string, number>;
  billingEntries: number;
  billingByKey: Record<string, number>;
  mediaRequests: number;
  redirects: number;
  faults: FaultCounters;
}

export interface KeyCounters {
  key: string;
  productCreateCalls: number;
  productId: string | null;
  aiCalls: number;
  aiResultId: string | null;
  billingEntries: number;
}

export class SimCounters {
  verifyCalls = 0;
  verifyFailures = 0;
  productCreateCalls = 0;
  productsCreated = 0;
  productsSeeded = 0;
  productReplays = 0;
  productConflicts = 0;
  productListCalls = 0;
  aiCalls = 0;
  aiReplays = 0;
  aiConflicts = 0;
  mediaRequests = 0;
  redirects = 0;
  readonly faults: FaultCounters = { errors: 0, timeouts: 0, drops: 0, delayed: 0 };
  readonly productCreateCallsByKey = new Map<string, number>();
  readonly aiCallsByKey = new Map<string, number>();

  /** Back to zero in place, so the stores holding this instance see the reset. */
  reset(): void {
    Object.assign(this, new SimCounters());
  }

  countProductCreateCall(key: string): void {
    this.productCreateCalls += 1;
    this.productCreateCallsByKey.set(key, (this.productCreateCallsByKey.get(key) ?? 0) + 1);
  }

  countAiCall(key: string): void {
    this.aiCalls += 1;
    this.aiCallsByKey.set(key, (this.aiCallsByKey.get(key) ?? 0) + 1);
  }
}
