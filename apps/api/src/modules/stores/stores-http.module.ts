import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { OperationsModule } from '../operations/operations.module';
import { OutboxWriterModule } from '../outbox-writer/outbox-writer.module';
import { StoresController } from './stores.controller';
import { StoresModule } from './stores.module';
import { StoresService } from './stores.service';

/** The stores routes (API role only). */
@Module({
  imports: [StoresModule, OperationsModule, AuditModule, OutboxWriterModule],
  controllers: [StoresController],
  providers: [StoresService],
})
export class StoresHttpModule {}
