import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { bearerToken, fingerprint, parseBody, requireIdempotencyKey } from '../http/request-helpers';
import { unauthorized } from '../http/sim-errors';
import type { SimState } from '../state/sim-state';
import { unknownImages } from './image-store';
import { productNotFound, type ProductInput } from './marketplace-store';

const storeId = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1-128 characters of [A-Za-z0-9._:-]');

const verifySchema = z.object({
  storeExternalId: storeId,
  apiKey: z.string().min(1).max(512),
  apiSecret: z.string().min(1).max(512),
});

const productSchema = z
  .object({
    title: z.string().min(1).max(500),
    price: z
      .union([
        z.number().nonnegative(),
        z.string().regex(/^\d{1,12}(\.\d{1,4})?$/, 'must be a decimal string'),
      ])
      .nullable()
      .optional(),
    images: z.array(z.string().min(1).max(2048)).max(50).optional(),
  })
  .catchall(z.unknown());

const listQuerySchema = z.object({
  cursor: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

const storeParams = z.object({ storeExternalId: storeId });
const imageParams = z.object({ storeExternalId: storeId, imageId: z.string().max(64) });
const productParams = z.object({ storeExternalId: storeId, productId: z.string().min(1).max(64) });
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];
const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

/** Credentials are valid when the API key starts with `valid-` (a convention the tests rely on). */
export function isValidApiKey(apiKey: string | undefined): apiKey is string {
  return apiKey !== undefined && apiKey.startsWith('valid-') && apiKey.length > 'valid-'.length;
}

function requireApiKey(request: FastifyRequest): string {
  const apiKey = bearerToken(request);
  if (!isValidApiKey(apiKey)) throw unauthorized();
  return apiKey;
}

/** The marketplace API: credential verification, idempotent product creation and update, product listing. */
export function registerMarketplaceRoutes(app: FastifyInstance, state: SimState): void {
  app.post('/platform/v1/credentials/verify', async (request, reply) => {
    state.counters.verifyCalls += 1;
    const body = parseBody(verifySchema, request.body);
    if (!isValidApiKey(body.apiKey)) {
      state.counters.verifyFailures += 1;
      // The reason is a fixed code: neither the key nor the secret is ever echoed.
      return reply.code(401).send({ valid: false, reason: 'INVALID_CREDENTIALS' });
    }
    return reply.code(200).send({
      valid: true,
      storeExternalId: body.storeExternalId,
      shopName: `Sim Shop ${body.storeExternalId}`,
    });
  });

  app.post('/platform/v1/stores/:storeExternalId/products', async (request, reply) => {
    const { storeExternalId } = parseBody(storeParams, request.params);
    requireApiKey(request);
    const key = requireIdempotencyKey(request);
    state.counters.countProductCreateCall(key);
    const input = parseBody(productSchema, request.body) as ProductInput;
    const missing = state.images.missing(storeExternalId, input.images ?? []);
    if (missing.length) throw unknownImages(missing);
    const print = fingerprint({ operation: 'create-product', storeExternalId, body: input });
    const result = state.marketplace.createProduct(key, print, storeExternalId, input);
    if (result.replayed) reply.header('idempotent-replayed', 'true');
    return reply.code(result.status).send(result.product);
  });

  // A full PUT: the body is the product's whole content, as on create.
  app.put('/platform/v1/stores/:storeExternalId/products/:productId', async (request, reply) => {
    const { storeExternalId, productId } = parseBody(productParams, request.params);
    requireApiKey(request);
    const key = requireIdempotencyKey(request);
    state.counters.countProductUpdateCall(key);
    const input = parseBody(productSchema, request.body) as ProductInput;
    const missing = state.images.missing(storeExternalId, input.images ?? []);
    if (missing.length) throw unknownImages(missing);
    const print = fingerprint({ operation: 'update-product', storeExternalId, productId, body: input });
    const result = state.marketplace.updateProduct(key, print, storeExternalId, productId, input);
    if (result.replayed) reply.header('idempotent-replayed', 'true');
    return reply.code(result.status).send(result.product);
  });

  app.get('/platform/v1/stores/:storeExternalId/products/:productId', async (request, reply) => {
    const { storeExternalId, productId } = parseBody(productParams, request.params);
    requireApiKey(request);
    const product = state.marketplace.get(storeExternalId, productId);
    if (!product) throw productNotFound();
    return reply.code(200).send(product);
  });

  // Product images: the bytes once per Idempotency-Key; a product names them by imageId.
  app.addContentTypeParser(
    /^image\//,
    { parseAs: 'buffer', bodyLimit: MAX_IMAGE_BYTES },
    (_request, body, done) => done(null, body),
  );
  app.post('/platform/v1/stores/:storeExternalId/images', async (request, reply) => {
    const { storeExternalId } = parseBody(storeParams, request.params);
    requireApiKey(request);
    const key = requireIdempotencyKey(request);
    const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (!IMAGE_TYPES.includes(contentType) || !Buffer.isBuffer(request.body) || request.body.length === 0) {
      return reply
        .code(415)
        .send({ error: 'UNSUPPORTED_IMAGE', message: `send the bytes as one of ${IMAGE_TYPES.join(', ')}` });
    }
    const result = state.images.upload(key, storeExternalId, contentType, request.body);
    if (result.replayed) reply.header('idempotent-replayed', 'true');
    return reply.code(201).send(result.image);
  });

  app.get('/platform/v1/stores/:storeExternalId/images/:imageId', async (request, reply) => {
    const { storeExternalId, imageId } = parseBody(imageParams, request.params);
    requireApiKey(request);
    const saved = state.images.find(storeExternalId, imageId);
    if (!saved) return reply.code(404).send({ error: 'NOT_FOUND', message: 'no such image' });
    return reply.code(200).type(saved.image.contentType).send(saved.bytes);
  });

  app.get('/platform/v1/stores/:storeExternalId/products', async (request, reply) => {
    const { storeExternalId } = parseBody(storeParams, request.params);
    requireApiKey(request);
    const query = parseBody(listQuerySchema, request.query);
    state.counters.productListCalls += 1;
    return reply.code(200).send(state.marketplace.list(storeExternalId, query.cursor, query.limit));
  });
}
