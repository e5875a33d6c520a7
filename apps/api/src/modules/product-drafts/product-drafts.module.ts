import { Module } from '@nestjs/common';
import { ProductDraftsController } from './product-drafts.controller';
import { ProductDraftsService } from './product-drafts.service';

@Module({ controllers: [ProductDraftsController], providers: [ProductDraftsService] })
export class ProductDraftsModule {}
