import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { faultConfigSchema, faultRuleSchema } from '../faults/fault-injector';
import { bearerToken, parseBody, safeEqual } from '../http/request-helpers';
import { SimError } from '../http/sim-errors';
import type { SimState } from '../state/sim-state';

const seedSchema = z.object({
  count: z.number().int().min(1).max(100_000),
  titlePrefix: z.string().min(1).max(200).default('Seeded product'),
});

const storeParams = z.object({
  storeExternalId: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1-128 characters of [A-Za-z0-9._:-]'),
});

export interface AdminRouteOptions {
  adminToken?: string;
}

/** Control plane for tests: counters, reset, fault injection, seeding. Never faulted. */
export function registerAdminRoutes(app: FastifyInstance, state: SimState, options: AdminRouteOptions): void {
  void app.register(
    async (admin) => {
      const { adminToken } = options;
      if (adminToken !== undefined) {
        admin.addHook('onRequest', async (request) => {
          const token = bearerToken(request);
          if (token === undefined || !safeEqual(token, adminToken)) {
            throw new SimError(
              401,
              'ADMIN_UNAUTHORIZED',
              'admin routes require Authorization: Bearer <SIM_ADMIN_TOKEN>',
            );
          }
        });
      }

      admin.get('/counters', async () => state.snapshot());

      admin.get('/counters/:key', async (request) => state.forKey((request.params as { key: string }).key));

      admin.post('/reset', async () => {
        state.reset();
        return { reset: true };
      });

      admin.get('/faults', async () => ({ rules: state.faults.current() }));

      // Either one rule (`{ errorRate, latencyMs, ... }`) or `{ rules: [...] }` (first match wins).
      // Replaces whatever was configured before.
      admin.post('/faults', async (request) => {
        const body = request.body as Record<string, unknown> | undefined;
        const rules =
          body && typeof body === 'object' && 'rules' in body
            ? parseBody(faultConfigSchema, body).rules
            : [parseBody(faultRuleSchema, body)];
        state.faults.configure(rules);
        return { rules: state.faults.current() };
      });

      admin.delete('/faults', async () => {
        state.faults.clear();
        return { rules: [] };
      });

      admin.post('/stores/:storeExternalId/products/seed', async (request, reply) => {
        const { storeExternalId } = parseBody(storeParams, request.params);
        const body = parseBody(seedSchema, request.body);
        const created = state.marketplace.seed(storeExternalId, body.count, body.titlePrefix);
        return reply.code(201).send({
          storeExternalId,
          seeded: created.length,
          totalProducts: state.marketplace.countFor(storeExternalId),
          firstProductId: created[0].productId,
          lastProductId: created[created.length - 1].productId,
        });
      });

      admin.delete('/stores/:storeExternalId/products/:productId', async (request, reply) => {
        const { storeExternalId, productId } = parseBody(
          z.object({ storeExternalId: z.string().min(1), productId: z.string().min(1) }),
          request.params,
        );
        if (!state.marketplace.remove(storeExternalId, productId)) return reply.code(404).send({ productId });
        return reply.code(204).send();
      });

      // A misbehaving marketplace for tests: the store's listing hands back the first page's cursor.
      admin.post('/stores/:storeExternalId/products/cursor-loop', async (request, reply) => {
        const { storeExternalId } = parseBody(storeParams, request.params);
        const { on } = parseBody(z.object({ on: z.boolean() }), request.body);
        state.marketplace.setCursorLoop(storeExternalId, on);
        return reply.code(200).send({ storeExternalId, cursorLoop: on });
      });

      admin.get('/billing', async () => ({ entries: state.aiVendor.entries() }));
    },
    { prefix: '/admin' },
  );
}
