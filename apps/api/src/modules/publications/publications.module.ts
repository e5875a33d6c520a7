import { Module } from '@nestjs/common';
import { StoresModule } from '../stores/stores.module';
import { PublicationsController } from './publications.controller';
import { PublicationsRepository } from './publications.repository';
import { PublicationsService } from './publications.service';

@Module({
  imports: [StoresModule],
  controllers: [PublicationsController],
  providers: [PublicationsRepository, PublicationsService],
})
export class PublicationsModule {}
