/** The image types media and material transfers accept, identified by their magic bytes. */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
export type ImageType = (typeof IMAGE_TYPES)[number];

export function isImageType(value: string): value is ImageType {
  return (IMAGE_TYPES as readonly string[]).includes(value);
}

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

const startsWith = (bytes: Uint8Array, signature: number[], at = 0) =>
  bytes.length >= at + signature.length && signature.every((b, i) => bytes[at + i] === b);
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

/**
 * The image type the bytes really are, from their signature (never from a name or a header),
 * or null when they are none of the accepted types. Needs at most the first 12 bytes.
 */
export function sniffImageType(bytes: Uint8Array): ImageType | null {
  if (startsWith(bytes, PNG)) return 'image/png';
  // JPEG: SOI followed by the first marker's 0xFF.
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(bytes, ascii('GIF87a')) || startsWith(bytes, ascii('GIF89a'))) return 'image/gif';
  if (startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8)) return 'image/webp';
  return null;
}

/** Normalises a Content-Type header value to its lower-case media type (`image/jpg` → jpeg). */
export function mediaTypeOf(header: string | undefined | null): string | null {
  if (!header) return null;
  const type = header.split(';')[0]!.trim().toLowerCase();
  if (!type) return null;
  return type === 'image/jpg' || type === 'image/pjpeg' ? 'image/jpeg' : type;
}
