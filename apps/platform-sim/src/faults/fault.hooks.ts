import type { FastifyInstance, FastifyRequest } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SimState } from '../state/sim-state';

declare module 'fastify' {
  interface FastifyRequest {
    simDropResponse: boolean;
  }
}

/**
 * Wires the fault injector into the request lifecycle:
 * - latency and errors happen before the handler (no side effect);
 * - a timeout holds the request unanswered (no side effect) until the client gives up or
 *   `timeoutMs` passes, then destroys the socket;
 * - a drop lets the handler apply its side effect, then destroys the socket instead of answering.
 */
export function registerFaultHooks(app: FastifyInstance, state: SimState): void {
  const holds = new Set<() => void>();
  app.decorateRequest('simDropResponse', false);

  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?', 1)[0];
    const decision = state.faults.decide(request.method, path);
    if (!decision) return;
    if (decision.latencyMs > 0) await sleep(decision.latencyMs);
    switch (decision.action) {
      case 'error':
        request.log.info({ path, fault: 'error' }, 'fault injected');
        return reply.code(503).header('retry-after', '1').send({
          error: 'SIMULATED_FAULT',
          message: 'injected fault: service unavailable',
          retryable: true,
        });
      case 'timeout':
        request.log.info({ path, fault: 'timeout' }, 'fault injected');
        reply.hijack();
        await holdUntilClientGivesUp(request, decision.timeoutMs, holds);
        return;
      case 'drop':
        request.simDropResponse = true;
        return;
      case 'none':
        return;
    }
  });

  app.addHook('onSend', async (request, _reply, payload) => {
    if (request.simDropResponse) {
      state.counters.faults.drops += 1;
      request.log.info({ path: request.url.split('?', 1)[0], fault: 'drop' }, 'fault injected');
      // The side effect is applied; the client never learns it.
      request.raw.socket.destroy();
    }
    return payload;
  });

  // Held requests would otherwise keep close() waiting for up to timeoutMs.
  app.addHook('preClose', async () => {
    for (const destroy of [...holds]) destroy();
  });
}

function holdUntilClientGivesUp(request: FastifyRequest, ms: number, holds: Set<() => void>): Promise<void> {
  return new Promise((resolve) => {
    const socket = request.raw.socket;
    // The client may already have given up (e.g. during injected latency).
    if (socket.destroyed) return resolve();
    const release = () => {
      clearTimeout(timer);
      socket.off('close', release);
      holds.delete(destroy);
      resolve();
    };
    const destroy = () => {
      socket.destroy();
      release();
    };
    const timer = setTimeout(destroy, ms);
    socket.once('close', release);
    holds.add(destroy);
  });
}
