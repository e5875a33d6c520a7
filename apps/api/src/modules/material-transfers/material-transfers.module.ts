import { Module } from '@nestjs/common';
import { DeclareJobs } from '@listing/outbox';
import { MediaModule } from '../media/media.module';
import { ObjectStorageModule } from '../object-storage/object-storage.module';
import { OperationsModule } from '../operations/operations.module';
import { MaterialTransferJob, materialTransferJob } from './material-transfers.jobs';
import { MaterialTransfersRepository } from './material-transfers.repository';
import { TransferMediaBackfillJob, transferMediaBackfillJob } from './transfer-media-backfill.job';

/**
 * Material transfers: a collected image copied from an allowed source into object storage, which
 * then becomes a media.
 */
@DeclareJobs(materialTransferJob, transferMediaBackfillJob)
@Module({
  // MediaModule: a succeeded transfer becomes a media (MediaIntake).
  imports: [ObjectStorageModule, OperationsModule, MediaModule],
  providers: [MaterialTransfersRepository, MaterialTransferJob, TransferMediaBackfillJob],
  exports: [MaterialTransfersRepository],
})
export class MaterialTransfersModule {}
