import { AuditRepository } from '../audit/audit.repository';
import { Module } from '@nestjs/common';
import { MediaController } from './media.controller';
import { MediaRepository } from './media.repository';
import { MediaService } from './media.service';

@Module({ controllers: [MediaController], providers: [MediaService, MediaRepository, AuditRepository] })
export class MediaModule {}
