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
  imageUploadCalls: number;
  imagesStored: number;
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

/** The per-key counters, by the name a state file stores them under. */
export type KeyCounterName = 'productCreateCalls' | 'aiCalls';

export interface KeyCount {
  counter: KeyCounterName;
  key: string;
  value: number;
}

const SCALARS = [
  'verifyCalls',
  'verifyFailures',
  'productCreateCalls',
  'productsCreated',
  'productsSeeded',
  'productReplays',
  'productConflicts',
  'productListCalls',
  'imageUploadCalls',
  'imagesStored',
  'aiCalls',
  'aiReplays',
  'aiConflicts',
  'mediaRequests',
  'redirects',
] as const;
const FAULTS = ['errors', 'timeouts', 'drops', 'delayed'] as const;

export class SimCounters {
  verifyCalls = 0;
  verifyFailures = 0;
  productCreateCalls = 0;
  productsCreated = 0;
  productsSeeded = 0;
  productReplays = 0;
  productConflicts = 0;
  productListCalls = 0;
  imageUploadCalls = 0;
  imagesStored = 0;
  aiCalls = 0;
  aiReplays = 0;
  aiConflicts = 0;
  mediaRequests = 0;
  redirects = 0;
  readonly faults: FaultCounters = { errors: 0, timeouts: 0, drops: 0, delayed: 0 };
  readonly productCreateCallsByKey = new Map<string, number>();
  readonly aiCallsByKey = new Map<string, number>();
  // Keys whose count changed since the state file last saved them (unused in memory).
  private readonly unsavedKeys = new Map<KeyCounterName, Set<string>>([
    ['productCreateCalls', new Set()],
    ['aiCalls', new Set()],
  ]);

  /** Back to zero in place, so the stores holding this instance see the reset. */
  reset(): void {
    Object.assign(this, new SimCounters());
  }

  countProductCreateCall(key: string): void {
    this.productCreateCalls += 1;
    this.productCreateCallsByKey.set(key, (this.productCreateCallsByKey.get(key) ?? 0) + 1);
    this.unsavedKeys.get('productCreateCalls')?.add(key);
  }

  countAiCall(key: string): void {
    this.aiCalls += 1;
    this.aiCallsByKey.set(key, (this.aiCallsByKey.get(key) ?? 0) + 1);
    this.unsavedKeys.get('aiCalls')?.add(key);
  }

  /** Every scalar counter by name (`faults.errors` for the fault counters), for the state file. */
  values(): Map<string, number> {
    const out = new Map<string, number>(SCALARS.map((name) => [name, this[name]]));
    for (const name of FAULTS) out.set(`faults.${name}`, this.faults[name]);
    return out;
  }

  /** Per-key counts changed since `markKeysSaved`. */
  unsavedKeyCounts(): KeyCount[] {
    const out: KeyCount[] = [];
    for (const [counter, keys] of this.unsavedKeys) {
      const byKey = counter === 'aiCalls' ? this.aiCallsByKey : this.productCreateCallsByKey;
      for (const key of keys) out.push({ counter, key, value: byKey.get(key) ?? 0 });
    }
    return out;
  }

  markKeysSaved(): void {
    for (const keys of this.unsavedKeys.values()) keys.clear();
  }

  /** Takes over what a state file kept; names it does not know are ignored. */
  restore(values: ReadonlyMap<string, number>, keyCounts: readonly KeyCount[]): void {
    for (const name of SCALARS) this[name] = values.get(name) ?? 0;
    for (const name of FAULTS) this.faults[name] = values.get(`faults.${name}`) ?? 0;
    for (const { counter, key, value } of keyCounts) {
      if (counter === 'aiCalls') this.aiCallsByKey.set(key, value);
      else if (counter === 'productCreateCalls') this.productCreateCallsByKey.set(key, value);
    }
  }
}
