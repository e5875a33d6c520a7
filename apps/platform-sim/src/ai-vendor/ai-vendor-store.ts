import { idempotencyKeyReused, idempotencyScopeConflict } from '../http/sim-errors';
import type { SimCounters } from '../state/sim-counters';

export type AiKind = 'text' | 'category' | 'image';

export interface BillingEntry {
  entryId: string;
  idempotencyKey: string;
  kind: AiKind;
  units: number;
  amountMicros: number;
  createdAt: string;
}

export type AiResult = { resultId: string; kind: AiKind; billingEntryId: string } & Record<string, unknown>;

export interface AiCallResult {
  status: 200;
  result: AiResult;
  replayed: boolean;
}

interface IdempotencyRecord {
  kind: AiKind;
  fingerprint: string;
  result: AiResult;
}

/** One billed call as a state file keeps it: the idempotency record and its ledger entry. */
export interface SavedAiCall {
  seq: number;
  key: string;
  kind: AiKind;
  fingerprint: string;
  result: AiResult;
  entry: BillingEntry;
}

/**
 * Where a durable simulator writes its AI calls (the state file); none in memory. Called before
 * the in-memory write, in one transaction, so memory never holds what the file lacks.
 */
export interface AiVendorJournal {
  aiCallBilled(call: SavedAiCall): void;
}

// Prices make the ledger look like a bill; their values only matter as "never charged twice".
const PRICE_MICROS: Record<AiKind, number> = { text: 2_000, category: 1_000, image: 40_000 };

/**
 * The AI vendor's idempotency records and billing ledger. `call` is synchronous from lookup to
 * ledger write, so a key bills at most once however many requests race for it.
 */
export class AiVendorStore {
  private seq = 0;
  private readonly byKey = new Map<string, IdempotencyRecord>();
  private ledger: BillingEntry[] = [];
  private readonly billedByKey = new Map<string, number>();

  constructor(
    private readonly counters: SimCounters,
    private readonly journal?: AiVendorJournal,
  ) {}

  /** Takes over the calls a state file kept (in sequence order); ids continue after the last. */
  restore(saved: readonly SavedAiCall[]): void {
    for (const call of saved) {
      this.seq = Math.max(this.seq, call.seq);
      this.apply(call.key, call.kind, call.fingerprint, Object.freeze(call.result), call.entry);
    }
  }

  call(key: string, kind: AiKind, fingerprint: string, produce: () => Record<string, unknown>): AiCallResult {
    const existing = this.byKey.get(key);
    if (existing) {
      if (existing.kind !== kind) {
        this.counters.aiConflicts += 1;
        throw idempotencyScopeConflict();
      }
      if (existing.fingerprint !== fingerprint) {
        this.counters.aiConflicts += 1;
        throw idempotencyKeyReused();
      }
      this.counters.aiReplays += 1;
      return { status: 200, result: existing.result, replayed: true };
    }
    const seq = this.seq + 1;
    const entry: BillingEntry = {
      entryId: `bill_${seq.toString().padStart(8, '0')}`,
      idempotencyKey: key,
      kind,
      units: 1,
      amountMicros: PRICE_MICROS[kind],
      createdAt: new Date().toISOString(),
    };
    const result: AiResult = Object.freeze({
      ...produce(),
      resultId: `air_${seq.toString().padStart(8, '0')}`,
      kind,
      billingEntryId: entry.entryId,
    });
    this.journal?.aiCallBilled({ seq, key, kind, fingerprint, result, entry });
    this.seq = seq;
    this.apply(key, kind, fingerprint, result, entry);
    return { status: 200, result, replayed: false };
  }

  entries(): readonly BillingEntry[] {
    return this.ledger;
  }

  billingByKey(): Record<string, number> {
    return Object.fromEntries(this.billedByKey);
  }

  billedFor(key: string): number {
    return this.billedByKey.get(key) ?? 0;
  }

  resultIdForKey(key: string): string | null {
    return this.byKey.get(key)?.result.resultId ?? null;
  }

  reset(): void {
    this.seq = 0;
    this.byKey.clear();
    this.ledger = [];
    this.billedByKey.clear();
  }

  private apply(key: string, kind: AiKind, fingerprint: string, result: AiResult, entry: BillingEntry): void {
    this.ledger.push(entry);
    this.billedByKey.set(key, (this.billedByKey.get(key) ?? 0) + 1);
    this.byKey.set(key, { kind, fingerprint, result });
  }
}
