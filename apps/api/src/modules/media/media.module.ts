import { Module } from '@nestjs/common';
import { DeclareJobs } from '@listing/outbox';
import { AuditModule } from '../audit/audit.module';
import { ObjectStorageModule } from '../object-storage/object-storage.module';
import { OperationsModule } from '../operations/operations.module';
import { OutboxWriterModule } from '../outbox-writer/outbox-writer.module';
import { MediaIntake } from './media-intake.service';
import { MediaUsage } from './media-usage.service';
import { MediaProcessJob, mediaProcessJob } from './media.jobs';
import { MediaRepository } from './media.repository';

/** The media library: uploads in object storage, checked and given a thumbnail by a job. */
@DeclareJobs(mediaProcessJob)
@Module({
  imports: [ObjectStorageModule, OperationsModule, OutboxWriterModule, AuditModule],
  providers: [MediaRepository, MediaUsage, MediaIntake, MediaProcessJob],
  exports: [MediaRepository, MediaUsage, MediaIntake],
})
export class MediaModule {}
