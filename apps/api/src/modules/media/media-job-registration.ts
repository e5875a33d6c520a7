import type { Database } from '@listing/db';
import type { JobRegistry, OutboxLogger } from '@listing/outbox';
import { loadMediaConfig } from '../../config/media-config';
import { MaterialTransferJobHandlers } from '../material-transfers/material-transfers.jobs';
import { LocalDirectoryObjectStorage } from '../object-storage/local-directory-object-storage';
import { MediaJobHandlers } from './media.jobs';

/**
 * The worker side of media and material transfers: one call from worker.ts registers both
 * handlers with their object storage and configuration (the same variables the API reads).
 */
export function registerMediaJobHandlers(registry: JobRegistry, db: Database, logger: OutboxLogger): void {
  const config = loadMediaConfig();
  const storage = new LocalDirectoryObjectStorage(config.OBJECT_STORAGE_DIR);
  const log = (msg: string, fields: Record<string, unknown>) => logger.info(msg, fields);
  registry.registerHandlers(new MediaJobHandlers(db, storage, config, log));
  registry.registerHandlers(new MaterialTransferJobHandlers(db, storage, config, log));
}
