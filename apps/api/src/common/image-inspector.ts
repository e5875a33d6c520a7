import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { sniffImageType, type ImageType } from './image-sniffer';

/** A definitive verdict on some bytes: retrying cannot change it. */
export class ImageRejectedError extends Error {
  constructor(
    readonly code: 'MEDIA_TYPE_MISMATCH' | 'MEDIA_INVALID' | 'MEDIA_TOO_LARGE',
    message: string,
  ) {
    super(message);
    this.name = 'ImageRejectedError';
  }
}

export interface ImageFacts {
  contentType: ImageType;
  checksumSha256: string;
  size: number;
  width: number;
  height: number;
}

const FORMATS: Record<string, ImageType> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
};

// Decoding runs in the worker on untrusted bytes: libvips' own cache and concurrency are bounded
// so one large image cannot take the process's memory.
sharp.cache(false);
sharp.concurrency(1);

/**
 * Validates image bytes and derives their facts: the signature must match `expectedType` (when
 * given), the decoder must agree on the format, and the pixel count must stay under `maxPixels`
 * (checked from the header, before any pixel is decoded).
 */
export async function inspectImage(
  bytes: Buffer,
  options: { expectedType?: string; maxPixels: number },
): Promise<ImageFacts> {
  const sniffed = sniffImageType(bytes);
  if (!sniffed || (options.expectedType && sniffed !== options.expectedType)) {
    throw new ImageRejectedError(
      'MEDIA_TYPE_MISMATCH',
      sniffed
        ? `the content is ${sniffed}, not ${options.expectedType}`
        : 'the content is not an accepted image',
    );
  }
  let meta: sharp.Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw new ImageRejectedError('MEDIA_INVALID', 'the image could not be decoded');
  }
  if (!meta.width || !meta.height || FORMATS[meta.format ?? ''] !== sniffed) {
    throw new ImageRejectedError('MEDIA_INVALID', 'the image header is not valid');
  }
  if (meta.width * meta.height > options.maxPixels) {
    throw new ImageRejectedError('MEDIA_TOO_LARGE', `the image has more than ${options.maxPixels} pixels`);
  }
  return {
    contentType: sniffed,
    checksumSha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
    width: meta.width,
    height: meta.height,
  };
}

/**
 * A PNG thumbnail whose longest side is at most `size` (never enlarged), EXIF orientation applied,
 * first frame of an animation. Deterministic for the same bytes and library version.
 */
export async function renderThumbnail(
  bytes: Buffer,
  options: { size: number; maxPixels: number },
): Promise<{ body: Buffer; width: number; height: number }> {
  try {
    const { data, info } = await sharp(bytes, { limitInputPixels: options.maxPixels, failOn: 'error' })
      .rotate()
      .resize({ width: options.size, height: options.size, fit: 'inside', withoutEnlargement: true })
      .png({ compressionLevel: 9 })
      .toBuffer({ resolveWithObject: true });
    return { body: data, width: info.width, height: info.height };
  } catch {
    throw new ImageRejectedError('MEDIA_INVALID', 'the image could not be decoded');
  }
}
