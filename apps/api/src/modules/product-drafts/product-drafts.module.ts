import { Module } from '@nestjs/common';
import { MediaModule } from '../media/media.module';
import { RecordsModule } from '../records/records.module';
import { ProductDraftsController } from './product-drafts.controller';
import { ProductDraftsService } from './product-drafts.service';

/** Product drafts on the records kernel (API role only: no jobs). */
@Module({
  imports: [RecordsModule, MediaModule],
  controllers: [ProductDraftsController],
  providers: [ProductDraftsService],
})
export class ProductDraftsModule {}
