import type { Database } from '@listing/db';
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
 * worker's registry. Their jobs are defined with `transaction: false`: a marketplace or vendor
 * call must not hold a transaction (nor a pooled connection) open, so each step of theirs is a
 * short transaction of its own on the worker's pool.
 */
export function registerCapabilityHandlers(registry: JobRegistry, db: Database): void {
  const config = loadPlatformConfig();
  const cipher = CredentialCipher.parse(config.CREDENTIAL_KEYS, config.CREDENTIAL_KEY_ID);
  const platform = new PlatformClient(config.PLATFORM_BASE_URL, config.PLATFORM_TIMEOUT_MS);
  registry.registerHandlers(new StoreVerificationHandlers(db, cipher, platform));
  registry.registerHandlers(new PublicationHandlers(db, cipher, platform));
  registry.registerHandlers(new AiTaskHandlers(db, platform));
  registry.registerHandlers(new StoreSyncHandlers(db, cipher, platform));
}
