import { Module } from '@nestjs/common';
import { DeclareJobs } from '@listing/outbox';
import { ObjectStorageModule } from '../object-storage/object-storage.module';
import { OperationsModule } from '../operations/operations.module';
import { MediaUsage } from './media-usage.service';
import { MediaProcessJob, mediaProcessJob } from './media.jobs';
import { MediaRepository } from './media.repository';

/** The media library: uploads in object storage, checked and given a thumbnail by a job. */
@DeclareJobs(mediaProcessJob)
@Module({
  imports: [ObjectStorageModule, OperationsModule],
  providers: [MediaRepository, MediaUsage, MediaProcessJob],
  exports: [MediaRepository, MediaUsage],
})
export class MediaModule {}
