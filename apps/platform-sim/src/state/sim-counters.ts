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
  productUpdateCalls: number;
  productsUpdated: number;
  productUpdateReplays: number;
  productUpdateConflicts: number;
  imageUploadCalls: number;
  imagesStored: number;
  productCreateCallsByKey: Record<string, number>;
  productsByKey: Record<string, string>;
  productUpdateCallsByKey: Record<string, number>;
  /** Applied updates (replays excluded) per product id. */
  updatesByProduct: Record<string, number>;
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
export type KeyCounterName = 'productCreateCalls' | 'productUpdateCalls' | 'aiCalls';

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
  'productUpdateCalls',
  'productsUpdated',
  'productUpdateReplays',
  'productUpdateConflicts',
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
  productUpdateCalls = 0;
  productsUpdated = 0;
  productUpdateReplays = 0;
  productUpdateConflicts = 0;
  imageUploadCalls = 0;
  imagesStored = 0;
  aiCalls = 0;
  aiReplays = 0;
  aiConflicts = 0;
  mediaRequests = 0;
  redirects = 0;
  readonly faults: FaultCounters = { errors: 0, timeouts: 0, drops: 0, delayed: 0 };
  readonly productCreateCallsByKey = new Map<string, number>();
  readonly productUpdateCallsByKey = new Map<string, number>();
  readonly aiCallsByKey = new Map<string, number>();
  private readonly byKey: Record<KeyCounterName, Map<string, number>> = {
    productCreateCalls: this.productCreateCallsByKey,
    productUpdateCalls: this.productUpdateCallsByKey,
    aiCalls: this.aiCallsByKey,
  };
  // Keys whose count changed since the state file last saved them (unused in memory).
  private readonly unsavedKeys = new Map<KeyCounterName, Set<string>>([
    ['productCreateCalls', new Set()],
    ['productUpdateCalls', new Set()],
    ['aiCalls', new Set()],
  ]);

  /** Back to zero in place, so the stores holding this instance see the reset. */
  reset(): void {
    Object.assign(this, new SimCounters());
  }

  countProductCreateCall(key: string): void {
    this.productCreateCalls += 1;
    this.countKey('productCreateCalls', key);
  }

  countProductUpdateCall(key: string): void {
    this.productUpdateCalls += 1;
    this.countKey('productUpdateCalls', key);
  }

  countAiCall(key: string): void {
    this.aiCalls += 1;
    this.countKey('aiCalls', key);
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
      for (const key of keys) out.push({ counter, key, value: this.byKey[counter].get(key) ?? 0 });
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
      // Object.hasOwn: a counter name from the file is data, never a key of Object.prototype.
      if (Object.hasOwn(this.byKey, counter)) this.byKey[counter].set(key, value);
    }
  }

  private countKey(counter: KeyCounterName, key: string): void {
    const byKey = this.byKey[counter];
    byKey.set(key, (byKey.get(key) ?? 0) + 1);
    this.unsavedKeys.get(counter)?.add(key);
  }
}
