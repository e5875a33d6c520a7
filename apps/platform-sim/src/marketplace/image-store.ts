import { createHash } from 'node:crypto';
import { idempotencyKeyReused, SimError } from '../http/sim-errors';
import type { SimCounters } from '../state/sim-counters';

/** An image a store uploaded, as the marketplace answers it (the bytes are served apart). */
export interface MarketplaceImage {
  imageId: string;
  storeExternalId: string;
  contentType: string;
  size: number;
  sha256: string;
  createdAt: string;
}

/** An image as a state file keeps it: with its bytes and the key that uploaded it. */
export interface SavedImage {
  seq: number;
  image: MarketplaceImage;
  key: string;
  bytes: Buffer;
}

/** Where a durable simulator writes its images (the state file), before memory. */
export interface ImageJournal {
  imageStored(saved: SavedImage): void;
}

export const unknownImages = (ids: string[]) =>
  new SimError(422, 'UNKNOWN_IMAGE', 'images must name images uploaded to this store', { images: ids });

/**
 * Product images, uploaded once per Idempotency-Key: the same key with the same bytes answers the
 * first image again, with other bytes (or another store) it is a conflict. Synchronous like the
 * product store, so one key never makes two images.
 */
export class ImageStore {
  private seq = 0;
  private readonly byKey = new Map<string, SavedImage>();
  private readonly byId = new Map<string, SavedImage>();

  constructor(
    private readonly counters: SimCounters,
    private readonly journal?: ImageJournal,
  ) {}

  restore(saved: readonly SavedImage[]): void {
    for (const image of saved) this.place(image);
  }

  upload(
    key: string,
    storeExternalId: string,
    contentType: string,
    bytes: Buffer,
  ): { image: MarketplaceImage; replayed: boolean } {
    this.counters.imageUploadCalls += 1;
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const existing = this.byKey.get(key);
    if (existing) {
      const same =
        existing.image.sha256 === sha256 &&
        existing.image.storeExternalId === storeExternalId &&
        existing.image.contentType === contentType;
      if (!same) throw idempotencyKeyReused();
      return { image: existing.image, replayed: true };
    }
    const seq = this.seq + 1;
    const image: MarketplaceImage = Object.freeze({
      imageId: `img_${seq.toString().padStart(8, '0')}`,
      storeExternalId,
      contentType,
      size: bytes.length,
      sha256,
      createdAt: new Date().toISOString(),
    });
    const saved = { seq, image, key, bytes };
    this.journal?.imageStored(saved);
    this.place(saved);
    this.counters.imagesStored += 1;
    return { image, replayed: false };
  }

  /**
   * The uploaded-image ids (`img_…`) of `ids` that are no image of this store. Other entries are
   * URLs the marketplace fetches itself, as before uploads existed.
   */
  missing(storeExternalId: string, ids: readonly string[]): string[] {
    return ids.filter(
      (id) => id.startsWith('img_') && this.byId.get(id)?.image.storeExternalId !== storeExternalId,
    );
  }

  find(storeExternalId: string, imageId: string): SavedImage | undefined {
    const saved = this.byId.get(imageId);
    return saved?.image.storeExternalId === storeExternalId ? saved : undefined;
  }

  reset(): void {
    this.seq = 0;
    this.byKey.clear();
    this.byId.clear();
  }

  private place(saved: SavedImage): void {
    this.seq = Math.max(this.seq, saved.seq);
    this.byKey.set(saved.key, saved);
    this.byId.set(saved.image.imageId, saved);
  }
}
