import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { ObjectStorageModule } from '../object-storage/object-storage.module';
import { OperationsModule } from '../operations/operations.module';
import { OutboxWriterModule } from '../outbox-writer/outbox-writer.module';
import { MediaController } from './media.controller';
import { MediaModule } from './media.module';
import { MediaService } from './media.service';

/** The media routes (API role only). */
@Module({
  imports: [MediaModule, ObjectStorageModule, OperationsModule, AuditModule, OutboxWriterModule],
  controllers: [MediaController],
  providers: [MediaService],
})
export class MediaHttpModule {}
