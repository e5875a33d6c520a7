import type { FastifyAdapter } from '@nestjs/platform-fastify';
import { loadMediaConfig } from '../../config/media-config';

/** The one route that takes raw bytes (media.controller.ts), as Fastify names it. */
export const MEDIA_CONTENT_ROUTE = '/v1/workspaces/:workspaceId/media/:mediaId/content';

const RAW_TYPES = /^(application\/octet-stream|image\/[a-z0-9.+-]+)\s*(;|$)/i;

/** A refusal Fastify's error path recognises (problem-details.filter.ts maps the code to 415). */
class RawBodyNotAcceptedError extends Error {
  readonly code = 'FST_ERR_CTP_INVALID_MEDIA_TYPE';
  readonly statusCode = 415;
  constructor() {
    super('raw bytes are accepted only by the media content route');
  }
}

/**
 * Lets PUT .../media/{id}/content receive raw bytes: application/octet-stream and image/* bodies
 * arrive as a Buffer, bounded by MEDIA_MAX_BYTES (a larger Content-Length, or more bytes than
 * announced, is refused with 413 before the handler runs). Every other route refuses such a body
 * with 415 before reading it: MEDIA_MAX_BYTES is far above BODY_LIMIT_BYTES, and a JSON route
 * must not buffer (or fingerprint) megabytes of bytes it cannot use.
 */
export function registerRawImageBodyParser(
  adapter: FastifyAdapter,
  maxBytes = loadMediaConfig().MEDIA_MAX_BYTES,
): void {
  const instance = adapter.getInstance();
  instance.addHook('preParsing', async (request, _reply, payload) => {
    const type = request.headers['content-type'];
    if (type && RAW_TYPES.test(type) && request.routeOptions.url !== MEDIA_CONTENT_ROUTE) {
      throw new RawBodyNotAcceptedError();
    }
    return payload;
  });
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
