import { idempotencyKeyReused, SimError } from '../http/sim-errors';
import type { SimCounters } from '../state/sim-counters';

export interface ProductInput {
  title: string;
  price?: number | string | null;
  images?: string[];
  [field: string]: unknown;
}

export interface Product {
  productId: string;
  storeExternalId: string;
  title: string;
  price: number | string | null;
  images: string[];
  status: 'online';
  source: 'api' | 'seed';
  createdAt: string;
  [field: string]: unknown;
}

export interface CreateProductResult {
  status: 201;
  product: Product;
  replayed: boolean;
}

export interface ProductPage {
  items: Product[];
  nextCursor: string | null;
}

interface StoredProduct {
  seq: number;
  product: Product;
}

/** A product as a state file keeps it: with the idempotency key that created it, if any. */
export interface SavedProduct {
  seq: number;
  product: Product;
  idempotency: { key: string; fingerprint: string } | null;
  removed: boolean;
}

/**
 * Where a durable simulator writes its products (the state file); none in memory. Each call is
 * one transaction, made before the in-memory write, so memory never holds what the file lacks.
 */
export interface MarketplaceJournal {
  productsInserted(products: ReadonlyArray<Omit<SavedProduct, 'removed'>>): void;
  productRemoved(seq: number): void;
}

interface IdempotencyRecord {
  fingerprint: string;
  product: Product;
}

export const invalidCursor = () =>
  new SimError(400, 'INVALID_CURSOR', 'the cursor is not one this API issued');

/**
 * The marketplace's products. Every mutation is synchronous (no await between the idempotency
 * lookup and the insert), so concurrent requests in this single-threaded process can never both
 * create a product for one key.
 */
export class MarketplaceStore {
  private seq = 0;
  private readonly byStore = new Map<string, StoredProduct[]>();
  // One key space for the whole marketplace: a key reused on another store is a conflict,
  // never a second product.
  private readonly byKey = new Map<string, IdempotencyRecord>();
  /** Stores whose listing misbehaves (tests): every page points back to the first one. */
  private readonly loopingStores = new Set<string>();

  constructor(
    private readonly counters: SimCounters,
    private readonly journal?: MarketplaceJournal,
  ) {}

  /** Takes over the products a state file kept (in sequence order); ids continue after the last. */
  restore(saved: readonly SavedProduct[]): void {
    for (const { seq, product, idempotency, removed } of saved) {
      const frozen = Object.freeze(product);
      this.seq = Math.max(this.seq, seq);
      if (idempotency)
        this.byKey.set(idempotency.key, { fingerprint: idempotency.fingerprint, product: frozen });
      if (!removed) this.place(seq, frozen);
    }
  }

  setCursorLoop(storeExternalId: string, on: boolean): void {
    if (on) this.loopingStores.add(storeExternalId);
    else this.loopingStores.delete(storeExternalId);
  }

  createProduct(
    key: string,
    fingerprint: string,
    storeExternalId: string,
    input: ProductInput,
  ): CreateProductResult {
    const existing = this.byKey.get(key);
    if (existing) {
      if (existing.fingerprint !== fingerprint) {
        this.counters.productConflicts += 1;
        throw idempotencyKeyReused();
      }
      this.counters.productReplays += 1;
      return { status: 201, product: existing.product, replayed: true };
    }
    const seq = this.seq + 1;
    const product = newProduct(seq, storeExternalId, input, 'api');
    this.journal?.productsInserted([{ seq, product, idempotency: { key, fingerprint } }]);
    this.seq = seq;
    this.place(seq, product);
    this.byKey.set(key, { fingerprint, product });
    this.counters.productsCreated += 1;
    return { status: 201, product, replayed: false };
  }

  /** Adds `count` online products to a store, as if created on the marketplace by other means. */
  seed(storeExternalId: string, count: number, titlePrefix: string): Product[] {
    const before = this.countFor(storeExternalId);
    const created: Array<{ seq: number; product: Product; idempotency: null }> = [];
    for (let i = 1; i <= count; i += 1) {
      const n = before + i;
      const input = { title: `${titlePrefix} ${n}`, price: (n % 100) + 0.99 };
      const seq = this.seq + i;
      created.push({ seq, product: newProduct(seq, storeExternalId, input, 'seed'), idempotency: null });
    }
    this.journal?.productsInserted(created);
    for (const { seq, product } of created) this.place(seq, product);
    this.seq += count;
    this.counters.productsSeeded += count;
    return created.map((c) => c.product);
  }

  /** Products in creation order; the cursor is the last sequence number seen, so pages stay stable while products are added. */
  list(storeExternalId: string, cursor: string | undefined, limit: number): ProductPage {
    const after = cursor ? decodeCursor(cursor) : 0;
    const rows = this.byStore.get(storeExternalId) ?? [];
    let start = lowerBound(rows, after + 1);
    const items: Product[] = [];
    while (start < rows.length && items.length < limit) {
      items.push(rows[start].product);
      start += 1;
    }
    const last = items.length > 0 ? rows[start - 1].seq : after;
    if (this.loopingStores.has(storeExternalId) && start < rows.length) {
      return { items, nextCursor: encodeCursor(0) };
    }
    return { items, nextCursor: start < rows.length ? encodeCursor(last) : null };
  }

  /** Takes a product off the store, as if deleted on the marketplace. True when it was there. */
  remove(storeExternalId: string, productId: string): boolean {
    const rows = this.byStore.get(storeExternalId) ?? [];
    const at = rows.findIndex((r) => r.product.productId === productId);
    if (at < 0) return false;
    this.journal?.productRemoved(rows[at].seq);
    rows.splice(at, 1); // rows stay in sequence order: the cursor search still works
    return true;
  }

  countFor(storeExternalId: string): number {
    return this.byStore.get(storeExternalId)?.length ?? 0;
  }

  productIdForKey(key: string): string | null {
    return this.byKey.get(key)?.product.productId ?? null;
  }

  productsByKey(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [key, record] of this.byKey) out[key] = record.product.productId;
    return out;
  }

  reset(): void {
    this.seq = 0;
    this.byStore.clear();
    this.byKey.clear();
    this.loopingStores.clear();
  }

  private place(seq: number, product: Product): void {
    const rows = this.byStore.get(product.storeExternalId) ?? [];
    rows.push({ seq, product });
    this.byStore.set(product.storeExternalId, rows);
  }
}

function newProduct(
  seq: number,
  storeExternalId: string,
  input: ProductInput,
  source: Product['source'],
): Product {
  const { title, price, images, ...extra } = input;
  return Object.freeze({
    ...extra,
    productId: `prd_${seq.toString().padStart(8, '0')}`,
    storeExternalId,
    title,
    price: price ?? null,
    images: [...(images ?? [])],
    status: 'online',
    source,
    createdAt: new Date().toISOString(),
  });
}

function encodeCursor(seq: number): string {
  return Buffer.from(`s:${seq}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^s:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw invalidCursor();
  return Number(match[1]);
}

/** First index whose seq is >= target (rows are sorted by seq). */
function lowerBound(rows: StoredProduct[], target: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid].seq < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
