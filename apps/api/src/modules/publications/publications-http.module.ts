import { Module } from '@nestjs/common';
import { OperationsModule } from '../operations/operations.module';
import { RecordsModule } from '../records/records.module';
import { StoresModule } from '../stores/stores.module';
import { PublicationUpdatesController } from './publication-updates.controller';
import { PublicationUpdatesService } from './publication-updates.service';
import { PublicationsController } from './publications.controller';
import { PublicationsModule } from './publications.module';
import { PublicationsService } from './publications.service';

/** The publications routes (API role only). */
@Module({
  imports: [PublicationsModule, StoresModule, RecordsModule, OperationsModule],
  controllers: [PublicationsController, PublicationUpdatesController],
  providers: [PublicationsService, PublicationUpdatesService],
})
export class PublicationsHttpModule {}
