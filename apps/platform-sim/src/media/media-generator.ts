import { hash32 } from '../http/request-helpers';
import { SimError } from '../http/sim-errors';
import { encodeJpeg } from './jpeg-encoder';
import { encodePng } from './png-encoder';

export type MediaFormat = 'png' | 'jpeg';

export interface MediaSpec {
  name: string;
  format: MediaFormat;
  width: number;
  height: number;
  // Incompressible pixels, for size-limit tests (a PNG of w*h*3 bytes and more).
  noise: boolean;
}

export const MAX_DIMENSION = 4096;
const DEFAULT_DIMENSION = 64;
const NAME_PATTERN = /^(?<stem>[A-Za-z0-9._-]{1,200})\.(?<ext>png|jpe?g)$/i;
const DIMENSIONS_IN_STEM = /(?:^|[-_.])(?<w>\d{1,5})x(?<h>\d{1,5})$/;

export const CONTENT_TYPES: Record<MediaFormat, string> = { png: 'image/png', jpeg: 'image/jpeg' };

/**
 * `{anything}-{W}x{H}.png|jpg|jpeg`; query `w`/`h` override the name; default 64x64.
 * Returns null for names that are not images here (404).
 */
export function parseMediaSpec(
  name: string,
  query: { w?: string; h?: string; noise?: string },
): MediaSpec | null {
  const match = NAME_PATTERN.exec(name);
  if (!match?.groups) return null;
  const dims = DIMENSIONS_IN_STEM.exec(match.groups.stem)?.groups;
  const width = dimension(query.w ?? dims?.w, 'w');
  const height = dimension(query.h ?? dims?.h, 'h');
  const format: MediaFormat = match.groups.ext.toLowerCase() === 'png' ? 'png' : 'jpeg';
  return { name, format, width, height, noise: query.noise === '1' || query.noise === 'true' };
}

function dimension(raw: string | undefined, field: string): number {
  if (raw === undefined) return DEFAULT_DIMENSION;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > MAX_DIMENSION) {
    throw new SimError(400, 'INVALID_DIMENSION', `${field} must be an integer from 1 to ${MAX_DIMENSION}`);
  }
  return value;
}

const cache = new Map<string, Buffer>();
const CACHE_LIMIT = 64;

/** Deterministic image bytes for a spec: the same name always yields the same bytes. */
export function renderMedia(spec: MediaSpec): Buffer {
  const cacheKey = `${spec.format}|${spec.width}x${spec.height}|${spec.noise}|${spec.name}`;
  const cached = cache.get(cacheKey);
  if (cached) return cached;
  const tint = hash32(spec.name) & 0xff;
  const { width, height } = spec;
  let bytes: Buffer;
  if (spec.format === 'png') {
    let state = hash32(cacheKey) || 1;
    const noise = (): number => {
      // xorshift32: cheap incompressible bytes.
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return state & 0xff;
    };
    bytes = spec.noise
      ? encodePng(width, height, () => [noise(), noise(), noise()], 1)
      : encodePng(width, height, (x, y) => [
          Math.floor((x * 255) / Math.max(1, width - 1)),
          Math.floor((y * 255) / Math.max(1, height - 1)),
          tint,
        ]);
  } else {
    const bw = Math.max(1, Math.ceil(width / 8) - 1);
    const bh = Math.max(1, Math.ceil(height / 8) - 1);
    bytes = spec.noise
      ? encodeJpeg(width, height, (bx, by) => hash32(`${cacheKey}|${bx}|${by}`) & 0xff)
      : encodeJpeg(width, height, (bx, by) => (tint + (bx * 127) / bw + (by * 127) / bh) % 256);
  }
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(cacheKey, bytes);
  return bytes;
}
