import { Global, Module } from '@nestjs/common';
import { AuditRepository } from '../audit/audit.repository';
import { RecordKernelService } from './record-kernel.service';
import { RecordsRepository } from './records.repository';

@Global()
@Module({
  providers: [RecordKernelService, RecordsRepository, AuditRepository],
  exports: [RecordKernelService, RecordsRepository, AuditRepository],
})
export class RecordsModule {}
