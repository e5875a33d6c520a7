import { Module } from '@nestjs/common';
import { MediaRepository } from '../media/media.repository';
import { ProductDraftsController } from './product-drafts.controller';
import { ProductDraftsService } from './product-drafts.service';

@Module({ controllers: [ProductDraftsController], providers: [ProductDraftsService, MediaRepository] })
export class ProductDraftsModule {}
