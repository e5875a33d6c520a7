import { AiVendorStore, type AiVendorJournal, type SavedAiCall } from '../ai-vendor/ai-vendor-store';
import { FaultInjector } from '../faults/fault-injector';
import {
  MarketplaceStore,
  type MarketplaceJournal,
  type SavedProduct,
  type SavedProductUpdate,
} from '../marketplace/marketplace-store';
import { ImageStore, type ImageJournal, type SavedImage } from '../marketplace/image-store';
import { type CountersSnapshot, type KeyCount, type KeyCounters, SimCounters } from './sim-counters';

/** What a state file hands back at boot. */
export interface SavedSimState {
  /** In sequence order, removed products included (their idempotency keys still replay). */
  products: SavedProduct[];
  /** In sequence order: the updates' idempotency records (products hold their current bodies). */
  productUpdates: SavedProductUpdate[];
  /** In sequence order. */
  images: SavedImage[];
  /** In sequence order: the ledger is their entries. */
  aiCalls: SavedAiCall[];
  counters: Map<string, number>;
  keyCounts: KeyCount[];
}

/** Where a durable simulator keeps its state (`SIM_STATE_FILE`; sqlite-state-file.ts). */
export interface SimStateFile extends MarketplaceJournal, ImageJournal, AiVendorJournal {
  /** Absolute path, for logs. */
  readonly path: string;
  load(): SavedSimState;
  countersSaved(values: ReadonlyArray<readonly [string, number]>, keyCounts: readonly KeyCount[]): void;
  cleared(): void;
  close(): void;
}

/**
 * Everything the simulator remembers. In memory, unless given a state file: then products,
 * idempotency records, the ledger and the counters outlive a restart (fault rules and
 * cursor-loop switches do not: a restarted provider is healthy). The file is written before
 * memory, within the same synchronous step, so one key still makes at most one product.
 */
export class SimState {
  readonly counters = new SimCounters();
  readonly marketplace: MarketplaceStore;
  readonly images: ImageStore;
  readonly aiVendor: AiVendorStore;
  readonly faults = new FaultInjector(this.counters);
  // Counter values as last written to the state file.
  private readonly savedCounters = new Map<string, number>();
  private closed = false;

  constructor(private readonly file?: SimStateFile) {
    this.marketplace = new MarketplaceStore(this.counters, file);
    this.images = new ImageStore(this.counters, file);
    this.aiVendor = new AiVendorStore(this.counters, file);
    if (file) {
      const saved = file.load();
      this.marketplace.restore(saved.products, saved.productUpdates);
      this.images.restore(saved.images);
      this.aiVendor.restore(saved.aiCalls);
      this.counters.restore(saved.counters, saved.keyCounts);
      for (const [name, value] of this.counters.values()) this.savedCounters.set(name, value);
    }
  }

  /** The state file's absolute path; undefined in memory. */
  get stateFile(): string | undefined {
    return this.file?.path;
  }

  /** Forgets everything, in the state file too. */
  reset(): void {
    this.file?.cleared();
    this.savedCounters.clear();
    this.counters.reset();
    this.marketplace.reset();
    this.images.reset();
    this.aiVendor.reset();
    this.faults.clear();
  }

  /** Writes the counters changed since the last save to the state file (nothing in memory). */
  saveCounters(): void {
    if (!this.file || this.closed) return;
    const changed: Array<[string, number]> = [];
    for (const [name, value] of this.counters.values()) {
      if (this.savedCounters.get(name) !== value) changed.push([name, value]);
    }
    const keyCounts = this.counters.unsavedKeyCounts();
    if (changed.length === 0 && keyCounts.length === 0) return;
    this.file.countersSaved(changed, keyCounts);
    for (const [name, value] of changed) this.savedCounters.set(name, value);
    this.counters.markKeysSaved();
  }

  /** Saves the counters and closes the state file (once); the in-memory state stays readable. */
  close(): void {
    if (!this.file || this.closed) return;
    try {
      this.saveCounters();
    } finally {
      this.closed = true;
      this.file.close();
    }
  }

  snapshot(): CountersSnapshot {
    const c = this.counters;
    return {
      verifyCalls: c.verifyCalls,
      verifyFailures: c.verifyFailures,
      productCreateCalls: c.productCreateCalls,
      productsCreated: c.productsCreated,
      productsSeeded: c.productsSeeded,
      productReplays: c.productReplays,
      productConflicts: c.productConflicts,
      productListCalls: c.productListCalls,
      productUpdateCalls: c.productUpdateCalls,
      productsUpdated: c.productsUpdated,
      productUpdateReplays: c.productUpdateReplays,
      productUpdateConflicts: c.productUpdateConflicts,
      imageUploadCalls: c.imageUploadCalls,
      imagesStored: c.imagesStored,
      productCreateCallsByKey: Object.fromEntries(c.productCreateCallsByKey),
      productsByKey: this.marketplace.productsByKey(),
      productUpdateCallsByKey: Object.fromEntries(c.productUpdateCallsByKey),
      updatesByProduct: this.marketplace.updateCounts(),
      aiCalls: c.aiCalls,
      aiReplays: c.aiReplays,
      aiConflicts: c.aiConflicts,
      aiCallsByKey: Object.fromEntries(c.aiCallsByKey),
      billingEntries: this.aiVendor.entries().length,
      billingByKey: this.aiVendor.billingByKey(),
      mediaRequests: c.mediaRequests,
      redirects: c.redirects,
      faults: { ...c.faults },
    };
  }

  forKey(key: string): KeyCounters {
    return {
      key,
      productCreateCalls: this.counters.productCreateCallsByKey.get(key) ?? 0,
      productId: this.marketplace.productIdForKey(key),
      aiCalls: this.counters.aiCallsByKey.get(key) ?? 0,
      aiResultId: this.aiVendor.resultIdForKey(key),
      billingEntries: this.aiVendor.billedFor(key),
    };
  }
}
