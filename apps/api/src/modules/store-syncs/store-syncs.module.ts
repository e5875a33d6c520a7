import { Module } from '@nestjs/common';
import { DeclareJobs } from '@listing/outbox';
import { AuditModule } from '../audit/audit.module';
import { OperationsModule } from '../operations/operations.module';
import { PlatformModule } from '../platform/platform.module';
import { StoresModule } from '../stores/stores.module';
import { runStoreSyncJob, StoreSyncJob } from './store-sync.job';
import { StoreSyncsRepository } from './store-syncs.repository';

/** Store syncs: the marketplace's product listing copied into the store's products. */
@DeclareJobs(runStoreSyncJob)
@Module({
  imports: [StoresModule, PlatformModule, OperationsModule, AuditModule],
  providers: [StoreSyncsRepository, StoreSyncJob],
  exports: [StoreSyncsRepository],
})
export class StoreSyncsModule {}
