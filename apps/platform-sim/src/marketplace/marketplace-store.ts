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
  /** Set by the first update. */
  updatedAt?: string;
  /** 1 on create, +1 per applied update. */
  version: number;
  [field: string]: unknown;
}

export interface CreateProductResult {
  status: 201;
  product: Product;
  replayed: boolean;
}

export interface UpdateProductResult {
  status: 200;
  product: Product;
  replayed: boolean;
}

export interface ProductPage {
  items: Product[];
  nextCursor: string | null;
}

/** Shared by the store's rows and the create key's record: an update replaces `product` for both. */
interface StoredProduct {
  seq: number;
  product: Product;
}

/** A product as a state file keeps it: with the idempotency key that created it, if any. */
export interface SavedProduct {
  seq: number;
  /** The current body. */
  product: Product;
  /** The body the create answered, when an update has changed it since (the key replays it). */
  created?: Product;
  idempotency: { key: string; fingerprint: string } | null;
  removed: boolean;
}

/** An applied update as a state file keeps it: `product` is the answer its key replays. */
export interface SavedProductUpdate {
  key: string;
  fingerprint: string;
  productSeq: number;
  product: Product;
}

/**
 * Where a durable simulator writes its products (the state file); none in memory. Each call is
 * one transaction, made before the in-memory write, so memory never holds what the file lacks.
 */
export interface MarketplaceJournal {
  productsInserted(products: ReadonlyArray<Omit<SavedProduct, 'removed'>>): void;
  productRemoved(seq: number): void;
  /** Keeps the update's idempotency record and rewrites the product's body, in one transaction. */
  productUpdated(update: SavedProductUpdate): void;
}

interface CreateRecord {
  fingerprint: string;
  stored: StoredProduct;
  /** What the create answered: its key replays it, whatever updates came after. */
  answer: Product;
}

interface UpdateRecord {
  fingerprint: string;
  product: Product;
}

export const invalidCursor = () =>
  new SimError(400, 'INVALID_CURSOR', 'the cursor is not one this API issued');

export const productNotFound = () => new SimError(404, 'PRODUCT_NOT_FOUND', 'no such product in this store');

/**
 * The marketplace's products. Every mutation is synchronous (no await between the idempotency
 * lookup and the insert), so concurrent requests in this single-threaded process can never both
 * create a product for one key.
 */
export class MarketplaceStore {
  private seq = 0;
  private readonly byStore = new Map<string, StoredProduct[]>();
  /** Products on a store (removed ones are not), by id. */
  private readonly byId = new Map<string, StoredProduct>();
  // One key space for the whole marketplace, creates and updates alike: a key reused on another
  // store or for the other operation is a conflict, never a second write.
  private readonly byKey = new Map<string, CreateRecord>();
  private readonly updatesByKey = new Map<string, UpdateRecord>();
  private readonly updatesByProduct = new Map<string, number>();
  /** Stores whose listing misbehaves (tests): every page points back to the first one. */
  private readonly loopingStores = new Set<string>();

  constructor(
    private readonly counters: SimCounters,
    private readonly journal?: MarketplaceJournal,
  ) {}

  /**
   * Takes over the products (their current bodies) and the updates a state file kept, in
   * sequence order; ids continue after the last.
   */
  restore(saved: readonly SavedProduct[], updates: readonly SavedProductUpdate[] = []): void {
    for (const { seq, product, created, idempotency, removed } of saved) {
      const stored = { seq, product: versioned(product) };
      this.seq = Math.max(this.seq, seq);
      if (idempotency) {
        const answer = created ? versioned(created) : stored.product;
        this.byKey.set(idempotency.key, { fingerprint: idempotency.fingerprint, stored, answer });
      }
      if (!removed) this.place(stored);
    }
    for (const { key, fingerprint, product } of updates)
      this.recordUpdate(key, fingerprint, Object.freeze(product));
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
    if ((existing && existing.fingerprint !== fingerprint) || this.updatesByKey.has(key)) {
      this.counters.productConflicts += 1;
      throw idempotencyKeyReused();
    }
    if (existing) {
      this.counters.productReplays += 1;
      return { status: 201, product: existing.answer, replayed: true };
    }
    const seq = this.seq + 1;
    const product = newProduct(seq, storeExternalId, input, 'api');
    this.journal?.productsInserted([{ seq, product, idempotency: { key, fingerprint } }]);
    this.seq = seq;
    const stored = { seq, product };
    this.place(stored);
    this.byKey.set(key, { fingerprint, stored, answer: product });
    this.counters.productsCreated += 1;
    return { status: 201, product, replayed: false };
  }

  /**
   * Replaces a product's content (a full PUT). A key replays the answer of its first update and
   * changes nothing, even when later updates moved the product on.
   */
  updateProduct(
    key: string,
    fingerprint: string,
    storeExternalId: string,
    productId: string,
    input: ProductInput,
  ): UpdateProductResult {
    const existing = this.updatesByKey.get(key);
    if ((existing && existing.fingerprint !== fingerprint) || this.byKey.has(key)) {
      this.counters.productUpdateConflicts += 1;
      throw idempotencyKeyReused();
    }
    if (existing) {
      this.counters.productUpdateReplays += 1;
      return { status: 200, product: existing.product, replayed: true };
    }
    const stored = this.find(storeExternalId, productId);
    if (!stored) throw productNotFound();
    const product = updatedProduct(stored.product, input);
    this.journal?.productUpdated({ key, fingerprint, productSeq: stored.seq, product });
    stored.product = product;
    this.recordUpdate(key, fingerprint, product);
    this.counters.productsUpdated += 1;
    return { status: 200, product, replayed: false };
  }

  /** A product on that store; undefined when it is another store's, removed or unknown. */
  get(storeExternalId: string, productId: string): Product | undefined {
    return this.find(storeExternalId, productId)?.product;
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
    for (const { seq, product } of created) this.place({ seq, product });
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
    this.byId.delete(productId);
    return true;
  }

  countFor(storeExternalId: string): number {
    return this.byStore.get(storeExternalId)?.length ?? 0;
  }

  productIdForKey(key: string): string | null {
    return this.byKey.get(key)?.stored.product.productId ?? null;
  }

  productsByKey(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [key, record] of this.byKey) out[key] = record.stored.product.productId;
    return out;
  }

  /** Applied updates per product id (replays are not updates). */
  updateCounts(): Record<string, number> {
    return Object.fromEntries(this.updatesByProduct);
  }

  reset(): void {
    this.seq = 0;
    this.byStore.clear();
    this.byId.clear();
    this.byKey.clear();
    this.updatesByKey.clear();
    this.updatesByProduct.clear();
    this.loopingStores.clear();
  }

  private find(storeExternalId: string, productId: string): StoredProduct | undefined {
    const stored = this.byId.get(productId);
    return stored?.product.storeExternalId === storeExternalId ? stored : undefined;
  }

  private recordUpdate(key: string, fingerprint: string, product: Product): void {
    this.updatesByKey.set(key, { fingerprint, product });
    this.updatesByProduct.set(product.productId, (this.updatesByProduct.get(product.productId) ?? 0) + 1);
  }

  private place(stored: StoredProduct): void {
    const rows = this.byStore.get(stored.product.storeExternalId) ?? [];
    rows.push(stored);
    this.byStore.set(stored.product.storeExternalId, rows);
    this.byId.set(stored.product.productId, stored);
  }
}

function newProduct(
  seq: number,
  storeExternalId: string,
  input: ProductInput,
  source: Product['source'],
): Product {
  return Object.freeze({
    ...content(input),
    productId: `prd_${seq.toString().padStart(8, '0')}`,
    storeExternalId,
    status: 'online',
    source,
    createdAt: new Date().toISOString(),
    version: 1,
  });
}

/** The product with `input` as its whole content; identity, status and creation time stay. */
function updatedProduct(current: Product, input: ProductInput): Product {
  return Object.freeze({
    ...content(input),
    productId: current.productId,
    storeExternalId: current.storeExternalId,
    status: current.status,
    source: current.source,
    createdAt: current.createdAt,
    updatedAt: new Date().toISOString(),
    version: current.version + 1,
  });
}

/** The content fields of a body; identity fields in it are overwritten by the caller. */
function content(input: ProductInput) {
  // updatedAt is the marketplace's to set, and a create sets none.
  const { title, price, images, updatedAt: _updatedAt, ...extra } = input;
  return { ...extra, title, price: price ?? null, images: [...(images ?? [])] };
}

/** Products saved before updates existed have no version: they are at 1. */
function versioned(product: Product): Product {
  return Object.freeze(typeof product.version === 'number' ? product : { ...product, version: 1 });
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
