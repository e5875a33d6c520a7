import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { TestDatabase } from '@listing/testing';
import { createApp } from '../../src/app.factory';
import { loadConfig } from '../../src/config/app-config';
import { apiEnv } from './api-process';

export interface InProcessApi {
  url: string;
  app: NestFastifyApplication;
  close(): Promise<void>;
}

/** The real HTTP API (Fastify, all modules) listening on an ephemeral port in this process. */
export async function startApi(
  db: TestDatabase,
  overrides: Record<string, string> = {},
): Promise<InProcessApi> {
  const app = await createApp(loadConfig(apiEnv(db, overrides)));
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, app, close: () => app.close() };
}
