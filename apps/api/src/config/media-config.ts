import { z } from 'zod';
import { ConfigError } from './app-config';

/**
 * Configuration of media and material transfers, read by both the API and the worker process
 * (they share object storage and limits). Parsed once at boot; a bad environment fails with the
 * list of every offending variable.
 */
const schema = z.object({
  /** Root of the local-directory object store (relative paths resolve from the process cwd). */
  OBJECT_STORAGE_DIR: z.string().min(1).default('./var/objects'),
  /** Largest accepted image, for uploads and material transfers alike. */
  MEDIA_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(20 * 1024 * 1024),
  /** Decompression-bomb guard: images with more pixels are refused before decoding. */
  MEDIA_MAX_PIXELS: z.coerce.number().int().min(1).default(50_000_000),
  /** Longest side of a thumbnail, in pixels. */
  MEDIA_THUMBNAIL_SIZE: z.coerce.number().int().min(16).max(1024).default(256),
  /** Comma-separated host[:port] entries material transfers may fetch from; empty allows none. */
  MATERIAL_SOURCE_ALLOWLIST: z.string().default(''),
  MATERIAL_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(15_000),
  MATERIAL_MAX_REDIRECTS: z.coerce.number().int().min(0).max(10).default(3),
});

export type MediaConfig = z.infer<typeof schema>;

export function loadMediaConfig(env: NodeJS.ProcessEnv = process.env): MediaConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  return parsed.data;
}

export const MEDIA_CONFIG = Symbol('MEDIA_CONFIG');
