import { Module } from '@nestjs/common';
import { Database } from '@listing/db';
import { DeclareJobs, retentionJob, RetentionService } from '@listing/outbox';
import { OUTBOX_CONFIG, type OutboxConfig } from '../config/outbox-config';
import { JobDiscovery } from './job-discovery';
import { RetentionJob } from './retention.job';
import { WorkerProcess } from './worker-process.service';

/** The worker role's own providers: discovery, the process, and the retention job it owns. */
@DeclareJobs(retentionJob)
@Module({
  providers: [
    JobDiscovery,
    WorkerProcess,
    RetentionJob,
    {
      provide: RetentionService,
      inject: [Database, OUTBOX_CONFIG],
      useFactory: (db: Database, config: OutboxConfig) =>
        new RetentionService(db, {
          dispatchedRetentionMs: config.OUTBOX_RETENTION_DISPATCHED_MS,
          inboxRetentionMs: config.OUTBOX_RETENTION_INBOX_MS,
          batchSize: config.OUTBOX_RETENTION_BATCH,
          maxBatches: config.OUTBOX_RETENTION_MAX_BATCHES,
        }),
    },
  ],
})
export class WorkerModule {}
