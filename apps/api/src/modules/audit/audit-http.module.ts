import { Module } from '@nestjs/common';
import { AuditController } from './audit.controller';
import { AuditModule } from './audit.module';

/** The audit log's route (API role only); AuditModule is the writers' part every role loads. */
@Module({
  imports: [AuditModule],
  controllers: [AuditController],
})
export class AuditHttpModule {}
