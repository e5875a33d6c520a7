import { writeFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { createApp } from './app.factory';
import { loadConfig } from './config/app-config';
import { loadApiOpsConfig } from './ops/ops-config';

/**
 * The API's OpenAPI document as `GET /docs/openapi.json` serves it, built without listening on a
 * port: the app is created and initialised in this process and the route is called through
 * Fastify's `inject`. PostgreSQL and Redis are never reached (the pools connect lazily), so the
 * URLs below point at a closed port on purpose: a change that made start-up connect would fail
 * here rather than quietly depend on a local server. The configuration is the defaults, never
 * this shell's environment: the document states the idempotency settings (`x-idempotency`).
 *
 *   node apps/api/dist/openapi-dump.js <file.json>    (scripts/client-generate.sh runs it)
 */
const DUMP_ENV = {
  LOG_LEVEL: 'silent',
  DATABASE_URL: 'postgres://openapi-dump@127.0.0.1:9/none',
  REDIS_URL: 'redis://127.0.0.1:9',
};

export async function servedOpenApiDocument(env: NodeJS.ProcessEnv = DUMP_ENV): Promise<unknown> {
  const app = await createApp(loadConfig(env), loadApiOpsConfig(env));
  try {
    await app.init();
    const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
    const res = await fastify.inject({ method: 'GET', url: '/docs/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`GET /docs/openapi.json → ${res.statusCode} ${res.body}`);
    return JSON.parse(res.body) as unknown;
  } finally {
    await app.close();
  }
}

/** The same JSON with every object's keys sorted (arrays keep their order): diffs stay stable. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

async function main(): Promise<void> {
  const out = process.argv[2];
  if (!out) throw new Error('usage: node dist/openapi-dump.js <file.json>');
  writeFileSync(out, `${JSON.stringify(sortKeys(await servedOpenApiDocument()), null, 2)}\n`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(`openapi-dump: ${(error as Error).stack ?? String(error)}`);
    process.exit(1);
  });
}
