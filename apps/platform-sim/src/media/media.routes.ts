import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { parseBody } from '../http/request-helpers';
import { notFound } from '../http/sim-errors';
import type { SimState } from '../state/sim-state';
import { CONTENT_TYPES, parseMediaSpec, renderMedia } from './media-generator';

const mediaQuery = z.object({
  w: z.string().max(6).optional(),
  h: z.string().max(6).optional(),
  noise: z.string().max(5).optional(),
  // Serve the bytes under another Content-Type, to test that clients sniff magic bytes.
  as: z
    .string()
    .regex(/^[a-z]+\/[a-z0-9.+-]+$/i, 'must be a media type')
    .optional(),
});

const redirectQuery = z.object({
  // Control characters would make an invalid Location header (a 500 instead of a 400).
  to: z
    .string()
    .min(1)
    .max(4096)
    .refine(
      (to) => ![...to].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f),
      'must not contain control characters',
    ),
  status: z.coerce
    .number()
    .int()
    .refine((s) => [301, 302, 303, 307, 308].includes(s), 'must be 301, 302, 303, 307 or 308')
    .default(302),
});

/** Source images for material transfer and media tests, plus an open redirect for redirect-safety tests. */
export function registerMediaRoutes(app: FastifyInstance, state: SimState): void {
  app.get('/platform/v1/media/:name', async (request, reply) => {
    state.counters.mediaRequests += 1;
    const { name } = request.params as { name: string };
    const query = parseBody(mediaQuery, request.query);
    const spec = parseMediaSpec(name, query);
    if (!spec) throw notFound('media');
    const bytes = renderMedia(spec);
    return reply
      .code(200)
      .header('content-type', query.as ?? CONTENT_TYPES[spec.format])
      .header('cache-control', 'public, max-age=3600')
      .send(bytes);
  });

  // Deliberately open: it redirects anywhere, including private addresses, which is what the
  // client's redirect checks must refuse.
  app.get('/platform/v1/redirect', async (request, reply) => {
    state.counters.redirects += 1;
    const query = parseBody(redirectQuery, request.query);
    return reply.code(query.status).header('location', query.to).send();
  });
}
