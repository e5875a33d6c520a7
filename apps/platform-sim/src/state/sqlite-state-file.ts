import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { AiKind, AiResult, BillingEntry, SavedAiCall } from '../ai-vendor/ai-vendor-store';
import type { MarketplaceImage, SavedImage } from '../marketplace/image-store';
import type { Product, SavedProduct, SavedProductUpdate } from '../marketplace/marketplace-store';
import type { KeyCount, KeyCounterName } from './sim-counters';
import type { SavedSimState, SimStateFile } from './sim-state';

// Marks the file as ours ('SIMS'), so another SQLite file is refused rather than written into.
const APPLICATION_ID = 0x53494d53;
const SCHEMA_VERSION = 4;

const IMAGES_TABLE = `
  CREATE TABLE images (
    seq INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    bytes BLOB NOT NULL
  ) STRICT;
`;

// An applied update: its idempotency record, with the product as that update answered it (the
// products row holds the current body).
const PRODUCT_UPDATES_TABLE = `
  CREATE TABLE product_updates (
    seq INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    product_seq INTEGER NOT NULL,
    body TEXT NOT NULL
  ) STRICT;
`;

// The body a keyed create answered, kept by the product's first update (before it, `body` is that
// answer): the create key replays it. NULL in rows a schema 3 file had already updated, whose
// create key replays the current body (the first answer was not kept).
const CREATED_BODY_COLUMN = 'ALTER TABLE products ADD COLUMN created_body TEXT;';

/** What a file of schema `n` lacks to be of schema n + 1: each version only added to it. */
const UPGRADES: Record<number, string> = {
  1: IMAGES_TABLE,
  2: PRODUCT_UPDATES_TABLE,
  3: CREATED_BODY_COLUMN,
};

// Products stay in the file when removed from a store: their keys still replay, and the largest
// seq is the product id counter. Likewise the largest ai_calls seq is the AI result counter.
const SCHEMA = `
  CREATE TABLE products (
    seq INTEGER PRIMARY KEY,
    store_external_id TEXT NOT NULL,
    idempotency_key TEXT UNIQUE,
    fingerprint TEXT,
    removed INTEGER NOT NULL DEFAULT 0,
    body TEXT NOT NULL,
    created_body TEXT
  ) STRICT;
  CREATE TABLE ai_calls (
    seq INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    result TEXT NOT NULL,
    entry TEXT NOT NULL
  ) STRICT;
  ${IMAGES_TABLE}
  ${PRODUCT_UPDATES_TABLE}
  CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT, WITHOUT ROWID;
  CREATE TABLE key_counters (
    counter TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (counter, idempotency_key)
  ) STRICT, WITHOUT ROWID;
`;

/** The state file cannot be used; the message says why and what to do. */
export class StateFileError extends Error {
  readonly code = 'SIM_STATE_FILE';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StateFileError';
  }
}

interface ProductRow {
  seq: number;
  idempotency_key: string | null;
  fingerprint: string | null;
  removed: number;
  body: string;
  created_body: string | null;
}

interface ProductUpdateRow {
  idempotency_key: string;
  fingerprint: string;
  product_seq: number;
  body: string;
}

interface AiCallRow {
  seq: number;
  idempotency_key: string;
  kind: AiKind;
  fingerprint: string;
  result: string;
  entry: string;
}

/**
 * The simulator's state in one SQLite file (better-sqlite3: synchronous, so a write happens in
 * the same step as the idempotency lookup). WAL with synchronous=NORMAL: every commit survives
 * the process being killed. The file is locked exclusively while open, so a second simulator on
 * the same file fails at boot instead of handing out the same ids.
 */
export class SqliteStateFile implements SimStateFile {
  private constructor(
    readonly path: string,
    private readonly db: Database.Database,
  ) {}

  static open(file: string): SqliteStateFile {
    const path = resolve(file);
    let db: Database.Database;
    try {
      mkdirSync(dirname(path), { recursive: true });
      db = new Database(path, { timeout: 500 });
    } catch (error) {
      throw explain(path, error);
    }
    try {
      db.pragma('locking_mode = EXCLUSIVE');
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.transaction(() => prepareSchema(path, db)).exclusive();
    } catch (error) {
      db.close();
      throw explain(path, error);
    }
    return new SqliteStateFile(path, db);
  }

  load(): SavedSimState {
    const products = this.db
      .prepare<[], ProductRow>(
        'SELECT seq, idempotency_key, fingerprint, removed, body, created_body FROM products ORDER BY seq',
      )
      .all()
      .map((row): SavedProduct => ({
        seq: row.seq,
        product: JSON.parse(row.body) as Product,
        ...(row.created_body === null ? {} : { created: JSON.parse(row.created_body) as Product }),
        idempotency:
          row.idempotency_key === null
            ? null
            : { key: row.idempotency_key, fingerprint: row.fingerprint ?? '' },
        removed: row.removed !== 0,
      }));
    const productUpdates = this.db
      .prepare<[], ProductUpdateRow>(
        'SELECT idempotency_key, fingerprint, product_seq, body FROM product_updates ORDER BY seq',
      )
      .all()
      .map((row): SavedProductUpdate => ({
        key: row.idempotency_key,
        fingerprint: row.fingerprint,
        productSeq: row.product_seq,
        product: JSON.parse(row.body) as Product,
      }));
    const aiCalls = this.db
      .prepare<[], AiCallRow>(
        'SELECT seq, idempotency_key, kind, fingerprint, result, entry FROM ai_calls ORDER BY seq',
      )
      .all()
      .map((row): SavedAiCall => ({
        seq: row.seq,
        key: row.idempotency_key,
        kind: row.kind,
        fingerprint: row.fingerprint,
        result: JSON.parse(row.result) as AiResult,
        entry: JSON.parse(row.entry) as BillingEntry,
      }));
    const counters = new Map(
      this.db
        .prepare<[], { name: string; value: number }>('SELECT name, value FROM counters')
        .all()
        .map((row) => [row.name, row.value] as const),
    );
    const keyCounts = this.db
      .prepare<[], { counter: KeyCounterName; key: string; value: number }>(
        'SELECT counter, idempotency_key AS key, value FROM key_counters',
      )
      .all();
    const images = this.db
      .prepare<[], { seq: number; idempotency_key: string; body: string; bytes: Buffer }>(
        'SELECT seq, idempotency_key, body, bytes FROM images ORDER BY seq',
      )
      .all()
      .map((row): SavedImage => ({
        seq: row.seq,
        key: row.idempotency_key,
        image: JSON.parse(row.body) as MarketplaceImage,
        bytes: row.bytes,
      }));
    return { products, productUpdates, images, aiCalls, counters, keyCounts };
  }

  productsInserted(products: ReadonlyArray<Omit<SavedProduct, 'removed'>>): void {
    const insert = this.db.prepare(
      'INSERT INTO products (seq, store_external_id, idempotency_key, fingerprint, body) VALUES (?, ?, ?, ?, ?)',
    );
    this.db.transaction(() => {
      for (const { seq, product, idempotency } of products) {
        insert.run(
          seq,
          product.storeExternalId,
          idempotency?.key ?? null,
          idempotency?.fingerprint ?? null,
          JSON.stringify(product),
        );
      }
    })();
  }

  imageStored({ seq, key, image, bytes }: SavedImage): void {
    this.db
      .prepare('INSERT INTO images (seq, idempotency_key, body, bytes) VALUES (?, ?, ?, ?)')
      .run(seq, key, JSON.stringify(image), bytes);
  }

  productRemoved(seq: number): void {
    this.db.prepare('UPDATE products SET removed = 1 WHERE seq = ?').run(seq);
  }

  productUpdated({ key, fingerprint, productSeq, product }: SavedProductUpdate): void {
    const body = JSON.stringify(product);
    this.db.transaction(() => {
      this.db
        .prepare(
          'INSERT INTO product_updates (idempotency_key, fingerprint, product_seq, body) VALUES (?, ?, ?, ?)',
        )
        .run(key, fingerprint, productSeq, body);
      // The first update keeps the body it replaces: what the create key answered.
      this.db
        .prepare('UPDATE products SET created_body = coalesce(created_body, body), body = ? WHERE seq = ?')
        .run(body, productSeq);
    })();
  }

  aiCallBilled(call: SavedAiCall): void {
    this.db
      .prepare(
        'INSERT INTO ai_calls (seq, idempotency_key, kind, fingerprint, result, entry) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(
        call.seq,
        call.key,
        call.kind,
        call.fingerprint,
        JSON.stringify(call.result),
        JSON.stringify(call.entry),
      );
  }

  countersSaved(values: ReadonlyArray<readonly [string, number]>, keyCounts: readonly KeyCount[]): void {
    const counter = this.db.prepare(
      'INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
    );
    const keyCounter = this.db.prepare(
      `INSERT INTO key_counters (counter, idempotency_key, value) VALUES (?, ?, ?)
       ON CONFLICT (counter, idempotency_key) DO UPDATE SET value = excluded.value`,
    );
    this.db.transaction(() => {
      for (const [name, value] of values) counter.run(name, value);
      for (const { counter: name, key, value } of keyCounts) keyCounter.run(name, key, value);
    })();
  }

  cleared(): void {
    this.db.exec(
      'BEGIN; DELETE FROM products; DELETE FROM product_updates; DELETE FROM images; DELETE FROM ai_calls; DELETE FROM counters; DELETE FROM key_counters; COMMIT;',
    );
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

/** Creates the schema in a new (empty) file; refuses a file that is not a state file of this version. */
function prepareSchema(path: string, db: Database.Database): void {
  const applicationId = db.pragma('application_id', { simple: true }) as number;
  const version = db.pragma('user_version', { simple: true }) as number;
  const { tables } = db
    .prepare<[], { tables: number }>('SELECT count(*) AS tables FROM sqlite_master')
    .get()!;
  if (applicationId === 0 && version === 0 && tables === 0) {
    db.exec(SCHEMA);
    db.pragma(`application_id = ${APPLICATION_ID}`);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
    return;
  }
  if (applicationId !== APPLICATION_ID) {
    throw new StateFileError(`${path} is a SQLite file, but not a platform-sim state file`);
  }
  if (version >= 1 && version < SCHEMA_VERSION) {
    // 1 → 2: product images; 2 → 3: product updates (an older file has none of either); 3 → 4:
    // the create's answer, kept by a product's first update.
    for (let from = version; from < SCHEMA_VERSION; from += 1) db.exec(UPGRADES[from]);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
    return;
  }
  if (version !== SCHEMA_VERSION) {
    throw new StateFileError(
      `${path} has state schema ${version}; this simulator reads ${SCHEMA_VERSION} (delete the file to start afresh)`,
    );
  }
}

function explain(path: string, error: unknown): Error {
  if (error instanceof StateFileError) return error;
  const { code, message } = error as { code?: string; message?: string };
  const because =
    code === 'SQLITE_BUSY'
      ? 'it is in use by another platform-sim'
      : code === 'SQLITE_NOTADB'
        ? 'it is not a SQLite file'
        : /bindings file|better_sqlite3\.node|NODE_MODULE_VERSION/.test(message ?? '')
          ? "better-sqlite3's native addon is not built for this Node " +
            '(run `pnpm --filter @listing/platform-sim run postinstall`)'
          : (message ?? String(error));
  return new StateFileError(`cannot use the state file ${path}: ${because}`, { cause: error });
}
