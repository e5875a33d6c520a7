import { AuditRepository } from '../audit/audit.repository';
import { Module } from '@nestjs/common';
import { MaterialTransfersController } from './material-transfers.controller';
import { MaterialTransfersRepository } from './material-transfers.repository';
import { MaterialTransfersService } from './material-transfers.service';

@Module({
  controllers: [MaterialTransfersController],
  providers: [MaterialTransfersService, MaterialTransfersRepository, AuditRepository],
})
export class MaterialTransfersModule {}
