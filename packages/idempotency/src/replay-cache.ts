/**
 * Process-local LRU of restored results. Safe because a SUCCEEDED record never changes until it
 * expires, and a restored result is built from immutable data only; entries die with the record.
 * It turns a replay into a memory lookup (after auth), which is what makes retries cheap.
 */
export interface CachedReplay {
  operation: string;
  fingerprintKeyId: string;
  fingerprint: Buffer;
  policy: string;
  status: number;
  result: unknown;
  expiresAt: number;
}

export class ReplayCache {
  private readonly entries = new Map<string, CachedReplay>();

  constructor(private readonly capacity: number) {}

  get(id: string, now = Date.now()): CachedReplay | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.entries.delete(id);
    if (entry.expiresAt <= now) return undefined;
    this.entries.set(id, entry); // most recently used last
    return entry;
  }

  set(id: string, entry: CachedReplay): void {
    if (this.capacity <= 0) return;
    this.entries.delete(id);
    this.entries.set(id, entry);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  clear(): void {
    this.entries.clear();
  }
}
