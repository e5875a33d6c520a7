import { Module } from '@nestjs/common';
import { DeclareJobs } from '@listing/outbox';
import { AuditModule } from '../audit/audit.module';
import { MediaModule } from '../media/media.module';
import { OperationsModule } from '../operations/operations.module';
import { PlatformModule } from '../platform/platform.module';
import { RecordsModule } from '../records/records.module';
import { StoresModule } from '../stores/stores.module';
import { PublicationJob, publishProductJob } from './publication.job';
import { PublicationsRepository } from './publications.repository';

/** Publications: a draft revision sent to a store as a marketplace product. */
@DeclareJobs(publishProductJob)
@Module({
  imports: [StoresModule, RecordsModule, MediaModule, PlatformModule, OperationsModule, AuditModule],
  providers: [PublicationsRepository, PublicationJob],
  exports: [PublicationsRepository],
})
export class PublicationsModule {}
