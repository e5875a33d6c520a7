import { Database } from '@listing/db';
import type { JobRegistry } from '@listing/outbox';
import { loadPlatformConfig } from '../../config/app-config';
import { AiTaskHandlers } from '../ai-tasks/ai-task.job';
import { PublicationHandlers } from '../publications/publication.job';
import { StoreSyncHandlers } from '../store-syncs/store-sync.job';
import { CredentialCipher } from '../stores/credential-cipher';
import { StoreVerificationHandlers } from '../stores/store-verification.job';
import { PlatformClient } from './platform.client';

/**
 * Registers the first-batch capability handlers (stores, publications, syncs, AI tasks) with the
 * worker's registry. They write through their own pool: the runtime wraps every handler in a
 * transaction, and these handlers must not hold one across a provider call, so each of their
 * steps is a short transaction of its own (the runtime's stays empty).
 */
export function registerCapabilityHandlers(
  registry: JobRegistry,
  options: { databaseUrl: string; poolSize: number },
): { close(): Promise<void> } {
  const config = loadPlatformConfig();
  const db = new Database({
    connectionString: options.databaseUrl,
    max: options.poolSize,
    applicationName: 'worker-effects',
  });
  const cipher = CredentialCipher.parse(config.CREDENTIAL_KEYS, config.CREDENTIAL_KEY_ID);
  const platform = new PlatformClient(config.PLATFORM_BASE_URL, config.PLATFORM_TIMEOUT_MS);
  registry.registerHandlers(new StoreVerificationHandlers(db, cipher, platform));
  registry.registerHandlers(new PublicationHandlers(db, cipher, platform));
  registry.registerHandlers(new AiTaskHandlers(db, platform));
  registry.registerHandlers(new StoreSyncHandlers(db, cipher, platform));
  return { close: () => db.close() };
}
