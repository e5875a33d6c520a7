import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { canonicalJson } from '../http/canonical-json';
import { fingerprint, hash32, parseBody, requireIdempotencyKey } from '../http/request-helpers';
import type { SimState } from '../state/sim-state';
import type { AiKind } from './ai-vendor-store';

const aiBodySchema = z.record(z.string(), z.unknown());
type AiBody = z.infer<typeof aiBodySchema>;

const TAXONOMY: ReadonlyArray<{ categoryId: string; path: string[] }> = [
  { categoryId: 'cat-1001', path: ['Home & Garden', 'Kitchen', 'Cookware'] },
  { categoryId: 'cat-1002', path: ['Electronics', 'Audio', 'Headphones'] },
  { categoryId: 'cat-1003', path: ['Fashion', 'Women', 'Dresses'] },
  { categoryId: 'cat-1004', path: ['Fashion', 'Men', 'Shoes'] },
  { categoryId: 'cat-1005', path: ['Sports', 'Outdoor', 'Camping'] },
  { categoryId: 'cat-1006', path: ['Toys', 'Building Sets'] },
  { categoryId: 'cat-1007', path: ['Beauty', 'Skincare'] },
  { categoryId: 'cat-1008', path: ['Books', 'Fiction'] },
];

/** What the model "reads": the prompt when given, else the title, else the whole body. */
function sourceText(body: AiBody): string {
  if (typeof body.prompt === 'string') return body.prompt;
  if (typeof body.title === 'string') return body.title;
  return canonicalJson(body);
}

function imageSide(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 2048 ? value : 512;
}

export interface AiRouteOptions {
  publicUrl?: string;
}

/**
 * The AI vendor: results are pure functions of the body (so tests can predict them), and every
 * call that is not a replay writes exactly one billing-ledger entry.
 */
export function registerAiVendorRoutes(app: FastifyInstance, state: SimState, options: AiRouteOptions): void {
  const baseUrl = (request: FastifyRequest) => options.publicUrl ?? `${request.protocol}://${request.host}`;

  const producers: Record<AiKind, (body: AiBody, request: FastifyRequest) => Record<string, unknown>> = {
    text: (body) => {
      const text = `Generated: ${sourceText(body).slice(0, 1000)}`;
      return { text, model: 'sim-text-1' };
    },
    category: (body) => {
      const h = hash32(canonicalJson(body));
      const pick = TAXONOMY[h % TAXONOMY.length];
      return { categoryId: pick.categoryId, path: [...pick.path], confidence: 0.5 + (h % 50) / 100 };
    },
    image: (body, request) => {
      const width = imageSide(body.width);
      const height = imageSide(body.height);
      const name = `ai-${fingerprint(body).slice(0, 16)}-${width}x${height}.png`;
      return {
        imageUrl: `${baseUrl(request)}/platform/v1/media/${name}`,
        width,
        height,
        contentType: 'image/png',
      };
    },
  };

  for (const kind of ['text', 'category', 'image'] as const) {
    app.post(`/ai/v1/${kind}`, async (request, reply) => {
      const key = requireIdempotencyKey(request);
      state.counters.countAiCall(key);
      const body = parseBody(aiBodySchema, request.body);
      const print = fingerprint({ operation: `ai-${kind}`, body });
      const outcome = state.aiVendor.call(key, kind, print, () => producers[kind](body, request));
      if (outcome.replayed) reply.header('idempotent-replayed', 'true');
      return reply.code(outcome.status).send(outcome.result);
    });
  }
}
