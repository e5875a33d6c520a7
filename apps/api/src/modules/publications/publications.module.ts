import { Module } from '@nestjs/common';
import { DeclareJobs } from '@listing/outbox';
import { AuditModule } from '../audit/audit.module';
import { MediaModule } from '../media/media.module';
import { OperationsModule } from '../operations/operations.module';
import { OutboxWriterModule } from '../outbox-writer/outbox-writer.module';
import { PlatformModule } from '../platform/platform.module';
import { RecordsModule } from '../records/records.module';
import { StoresModule } from '../stores/stores.module';
import { ProductContentService } from './product-content.service';
import { PublicationJob, publishProductJob } from './publication.job';
import { PublicationUpdateJob, updateProductJob } from './publication-update.job';
import { PublicationUpdatesRepository } from './publication-updates.repository';
import { PublicationsRepository } from './publications.repository';

/** Publications: a draft revision sent to a store as a marketplace product, then its updates. */
@DeclareJobs(publishProductJob, updateProductJob)
@Module({
  imports: [
    StoresModule,
    RecordsModule,
    MediaModule,
    PlatformModule,
    OperationsModule,
    AuditModule,
    OutboxWriterModule,
  ],
  providers: [
    PublicationsRepository,
    PublicationUpdatesRepository,
    ProductContentService,
    PublicationJob,
    PublicationUpdateJob,
  ],
  exports: [PublicationsRepository, PublicationUpdatesRepository],
})
export class PublicationsModule {}
