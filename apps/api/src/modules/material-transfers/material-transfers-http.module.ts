import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { ObjectStorageModule } from '../object-storage/object-storage.module';
import { OperationsModule } from '../operations/operations.module';
import { OutboxWriterModule } from '../outbox-writer/outbox-writer.module';
import { MaterialTransfersController } from './material-transfers.controller';
import { MaterialTransfersModule } from './material-transfers.module';
import { MaterialTransfersService } from './material-transfers.service';

/** The material transfer routes (API role only). */
@Module({
  imports: [MaterialTransfersModule, ObjectStorageModule, OperationsModule, AuditModule, OutboxWriterModule],
  controllers: [MaterialTransfersController],
  providers: [MaterialTransfersService],
})
export class MaterialTransfersHttpModule {}
