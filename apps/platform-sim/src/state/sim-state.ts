import { AiVendorStore } from '../ai-vendor/ai-vendor-store';
import { FaultInjector } from '../faults/fault-injector';
import { MarketplaceStore } from '../marketplace/marketplace-store';
import { type CountersSnapshot, type KeyCounters, SimCounters } from './sim-counters';

/** Everything the simulator remembers. In memory on purpose: a restart is a clean provider. */
export class SimState {
  readonly counters = new SimCounters();
  readonly marketplace = new MarketplaceStore(this.counters);
  readonly aiVendor = new AiVendorStore(this.counters);
  readonly faults = new FaultInjector(this.counters);

  reset(): void {
    this.counters.reset();
    this.marketplace.reset();
    this.aiVendor.reset();
    this.faults.clear();
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
      productCreateCallsByKey: Object.fromEntries(c.productCreateCallsByKey),
      productsByKey: this.marketplace.productsByKey(),
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
