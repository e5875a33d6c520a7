import { z } from 'zod';
import { isStorable } from '../../common/storable-text';
import { isoInstant } from '../../common/iso-instant';

/**
 * The provider could not be reached or answered with a transient failure (network error,
 * timeout, dropped response, 5xx, 429). The job retries through BullMQ with the same provider
 * key. The message is ours, never the provider's text.
 */
export class PlatformUnavailableError extends Error {
  readonly code = 'PLATFORM_UNAVAILABLE';
  constructor(
    readonly what: string,
    readonly httpStatus: number | null,
  ) {
    super(`${what}: platform unavailable${httpStatus ? ` (HTTP ${httpStatus})` : ''}`);
  }
}

/** The provider refused the request for good (4xx other than 429): retrying changes nothing. */
export class PlatformRejectedError extends Error {
  readonly code = 'PLATFORM_REJECTED';
  constructor(
    readonly what: string,
    readonly httpStatus: number,
  ) {
    super(`${what}: platform rejected the request (HTTP ${httpStatus})`);
  }
}

export interface PlatformProduct {
  productId: string;
  title: string;
  price: number | string | null;
  status: string;
  createdAt?: string;
}

const productPageSchema = z.object({
  items: z
    .array(
      z.object({
        // An id is a key: it must be stored exactly, so one PostgreSQL cannot store is refused.
        productId: z.string().min(1).max(200).refine(isStorable, 'not storable text'),
        title: z.string().default(''),
        price: z.union([z.number(), z.string(), z.null()]).default(null),
        status: z.string().default('online'),
        // Not worth failing a sync over: an unreadable time is stored as unknown.
        createdAt: z
          .string()
          .optional()
          .transform((v) => (v === undefined ? undefined : isoInstant(v))),
      }),
    )
    .max(1000),
  nextCursor: z.string().min(1).max(4096).nullable().optional(),
});

export type AiKind = 'text' | 'category' | 'image';

/** A store's marketplace credentials, in clear: only ever in a request to the marketplace. */
export interface MarketplaceCredentials {
  apiKey: string;
  apiSecret: string;
}

/**
 * HTTP client of the marketplace and the AI vendor. Credentials travel in the request only
 * (body for verification, bearer header otherwise); nothing here logs, and errors carry the
 * operation name and HTTP status only.
 */
export class PlatformClient {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs: number,
  ) {}

  /** True/false for a definite answer; throws PlatformUnavailableError otherwise. */
  async verifyCredentials(
    storeExternalId: string,
    credentials: MarketplaceCredentials,
  ): Promise<{ valid: true; shopName: string | null } | { valid: false }> {
    const res = await this.send('verify credentials', 'POST', '/platform/v1/credentials/verify', {
      body: { storeExternalId, apiKey: credentials.apiKey, apiSecret: credentials.apiSecret },
    });
    if (res.status === 401 || res.status === 403) return { valid: false };
    const body = (await this.json(res, 'verify credentials')) as { valid?: boolean; shopName?: unknown };
    if (body.valid !== true) return { valid: false };
    return { valid: true, shopName: typeof body.shopName === 'string' ? body.shopName.slice(0, 200) : null };
  }

  /** Creates a product; the same idempotency key returns the same product, never a second one. */
  async createProduct(
    storeExternalId: string,
    apiKey: string,
    idempotencyKey: string,
    product: Record<string, unknown>,
  ): Promise<{ productId: string }> {
    const what = 'create product';
    const res = await this.send(
      what,
      'POST',
      `/platform/v1/stores/${encodeURIComponent(storeExternalId)}/products`,
      {
        body: product,
        bearer: apiKey,
        idempotencyKey,
      },
    );
    const body = (await this.json(res, what)) as { productId?: unknown };
    if (typeof body.productId !== 'string') throw new PlatformUnavailableError(what, res.status);
    return { productId: body.productId };
  }

  /**
   * Replaces a product's content; the same idempotency key answers the first update again and
   * changes nothing. `version` is the platform's product version, null when it sends none.
   */
  async updateProduct(
    storeExternalId: string,
    apiKey: string,
    productId: string,
    idempotencyKey: string,
    product: Record<string, unknown>,
  ): Promise<{ productId: string; version: number | null }> {
    const what = 'update product';
    const res = await this.send(
      what,
      'PUT',
      `/platform/v1/stores/${encodeURIComponent(storeExternalId)}/products/${encodeURIComponent(productId)}`,
      { body: product, bearer: apiKey, idempotencyKey },
    );
    const body = (await this.json(res, what)) as { productId?: unknown; version?: unknown };
    if (typeof body.productId !== 'string') throw new PlatformUnavailableError(what, res.status);
    const version = typeof body.version === 'number' && Number.isFinite(body.version) ? body.version : null;
    return { productId: body.productId, version };
  }

  /** Uploads a product image; the same idempotency key returns the same image, never a second one. */
  async uploadImage(
    storeExternalId: string,
    apiKey: string,
    idempotencyKey: string,
    image: { contentType: string; bytes: Buffer },
  ): Promise<{ imageId: string }> {
    const what = 'upload image';
    const res = await this.send(
      what,
      'POST',
      `/platform/v1/stores/${encodeURIComponent(storeExternalId)}/images`,
      { raw: image, bearer: apiKey, idempotencyKey },
    );
    const body = (await this.json(res, what)) as { imageId?: unknown };
    if (typeof body.imageId !== 'string') throw new PlatformUnavailableError(what, res.status);
    return { imageId: body.imageId };
  }

  async listProducts(
    storeExternalId: string,
    apiKey: string,
    cursor: string | null,
    limit: number,
  ): Promise<{ items: PlatformProduct[]; nextCursor: string | null }> {
    const what = 'list products';
    const query = new URLSearchParams({ limit: String(limit) });
    if (cursor) query.set('cursor', cursor);
    const res = await this.send(
      what,
      'GET',
      `/platform/v1/stores/${encodeURIComponent(storeExternalId)}/products?${query.toString()}`,
      { bearer: apiKey },
    );
    const page = productPageSchema.safeParse(await this.json(res, what));
    // A page we cannot store as it is (ids PostgreSQL would truncate into collisions, a cursor
    // of megabytes) is the platform misbehaving: retried like an outage, never half-applied.
    if (!page.success) throw new PlatformUnavailableError(`${what} (unreadable page)`, res.status);
    // One product twice in a page would make the upsert touch a row twice: the last one wins.
    const byId = new Map(page.data.items.map((item) => [item.productId, item]));
    return { items: [...byId.values()], nextCursor: page.data.nextCursor ?? null };
  }

  /** One billed AI call; the same key is a free replay of the same result. */
  async ai(
    kind: AiKind,
    idempotencyKey: string,
    input: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const what = `ai ${kind}`;
    const res = await this.send(what, 'POST', `/ai/v1/${kind}`, { body: input, idempotencyKey });
    return (await this.json(res, what)) as Record<string, unknown>;
  }

  private async send(
    what: string,
    method: string,
    path: string,
    options: {
      body?: unknown;
      raw?: { contentType: string; bytes: Buffer };
      bearer?: string;
      idempotencyKey?: string;
    },
  ): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.raw) headers['content-type'] = options.raw.contentType;
    if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    let res: Response;
    try {
      res = await fetch(this.baseUrl.replace(/\/+$/, '') + path, {
        method,
        headers,
        body: options.raw
          ? options.raw.bytes
          : options.body === undefined
            ? undefined
            : JSON.stringify(options.body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch {
      // Network error, timeout or a response dropped after the side effect: retry with the key.
      throw new PlatformUnavailableError(what, null);
    }
    if (res.status >= 500 || res.status === 429 || res.status === 408) {
      await res.body?.cancel().catch(() => undefined);
      throw new PlatformUnavailableError(what, res.status);
    }
    return res;
  }

  private async json(res: Response, what: string): Promise<unknown> {
    if (res.status >= 400) {
      await res.body?.cancel().catch(() => undefined);
      throw new PlatformRejectedError(what, res.status);
    }
    try {
      return await res.json();
    } catch {
      throw new PlatformUnavailableError(what, res.status);
    }
  }
}
