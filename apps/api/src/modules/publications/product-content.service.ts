import { Injectable } from '@nestjs/common';
import { MediaUsage, type ReadyImage } from '../media/media-usage.service';
import { PlatformClient } from '../platform/platform.client';
import { PRODUCT_DRAFT_MODULE } from '../product-drafts/product-drafts.service';
import { RecordKernelService } from '../records/record-kernel.service';

/** What a draft revision sends to the marketplace: its body and its ready images. */
export interface ProductContent {
  product: Record<string, unknown>;
  /** The revision's ready images, uploaded (once each) before the product names them. */
  images: ReadyImage[];
}

/** The marketplace's idempotency key of one image of a publication: uploaded once per product. */
export const publicationImageKey = (publicationId: string, mediaId: string) =>
  `publication-${publicationId}-image-${mediaId}`;

/**
 * A draft revision as the marketplace receives it, for a first publish and for every update of
 * the product: a pure function of the immutable revision, so a repeated call sends the same.
 */
@Injectable()
export class ProductContentService {
  constructor(
    private readonly records: RecordKernelService,
    private readonly media: MediaUsage,
    private readonly platform: PlatformClient,
  ) {}

  /** In the claim's transaction: the revision's body and its ready images. */
  async load(publicationId: string, draftId: string, revision: number): Promise<ProductContent> {
    const found = await this.records.findRevision(PRODUCT_DRAFT_MODULE, draftId, revision);
    if (!found) throw new Error('publication revision missing');
    const imageIds = Array.isArray(found.data.imageIds) ? (found.data.imageIds as string[]) : [];
    return {
      product: productBody(publicationId, found.data),
      images: await this.media.readyImages(imageIds),
    };
  }

  /**
   * No transaction: each image first (its key is per product and image, so an update naming an
   * image the product already has answers the same image id), then the body naming them in the
   * revision's order.
   */
  async body(
    access: { storeExternalId: string; credentials: { apiKey: string } },
    publicationId: string,
    { product, images }: ProductContent,
  ): Promise<Record<string, unknown>> {
    const imageIds: string[] = [];
    for (const image of images) {
      const bytes = await this.media.bytesOf(image);
      if (!bytes) throw new Error(`the stored bytes of media ${image.mediaId} are missing or changed`);
      const uploaded = await this.platform.uploadImage(
        access.storeExternalId,
        access.credentials.apiKey,
        publicationImageKey(publicationId, image.mediaId),
        { contentType: image.contentType, bytes },
      );
      imageIds.push(uploaded.imageId);
    }
    // Without images the body is what it was before images were sent: a retry of a create
    // made by an older version still matches its provider key's first body.
    return imageIds.length ? { ...product, images: imageIds } : product;
  }
}

/** The marketplace body, a pure function of the immutable revision (a retry sends the same). */
function productBody(publicationId: string, data: Record<string, unknown>): Record<string, unknown> {
  const price = data.price as { amount?: string; currency?: string } | undefined;
  const body: Record<string, unknown> = {
    title: data.title,
    price: price?.amount ?? null,
    externalRef: publicationId,
  };
  if (price?.currency) body.currency = price.currency;
  for (const field of ['description', 'sku', 'categoryId'] as const) {
    if (typeof data[field] === 'string') body[field] = data[field];
  }
  if (data.attributes && typeof data.attributes === 'object') body.attributes = data.attributes;
  return body;
}
