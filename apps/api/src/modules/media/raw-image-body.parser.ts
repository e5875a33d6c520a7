import type { FastifyAdapter } from '@nestjs/platform-fastify';
import { loadMediaConfig } from '../../config/media-config';

/**
 * Lets PUT .../media/{id}/content receive raw bytes: application/octet-stream and image/* bodies
 * arrive as a Buffer, bounded by MEDIA_MAX_BYTES (a larger Content-Length, or more bytes than
 * announced, is refused with 413 before the handler runs). JSON routes keep BODY_LIMIT_BYTES.
 */
export function registerRawImageBodyParser(
  adapter: FastifyAdapter,
  maxBytes = loadMediaConfig().MEDIA_MAX_BYTES,
): void {
  const instance = adapter.getInstance();
  const asBuffer = (_request: unknown, body: Buffer, done: (error: Error | null, body?: Buffer) => void) =>
    done(null, body);
  instance.addContentTypeParser(
    'application/octet-stream',
    { parseAs: 'buffer', bodyLimit: maxBytes },
    asBuffer,
  );
  instance.addContentTypeParser(
    /^image\/[a-z0-9.+-]+$/i,
    { parseAs: 'buffer', bodyLimit: maxBytes },
    asBuffer,
  );
}
