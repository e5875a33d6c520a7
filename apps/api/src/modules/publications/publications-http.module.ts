import { Module } from '@nestjs/common';
import { OperationsModule } from '../operations/operations.module';
import { RecordsModule } from '../records/records.module';
import { StoresModule } from '../stores/stores.module';
import { PublicationsController } from './publications.controller';
import { PublicationsModule } from './publications.module';
import { PublicationsService } from './publications.service';

/** The publications routes (API role only). */
@Module({
  imports: [PublicationsModule, StoresModule, RecordsModule, OperationsModule],
  controllers: [PublicationsController],
  providers: [PublicationsService],
})
export class PublicationsHttpModule {}
