import { Controller, Get, Param, Query, UseGuards } from '@nestjs/common';
import { ParseIdPipe } from '../../common/http-params';
import { WorkspaceAuth, type WorkspaceAuthContext } from '../../common/request-context';
import { ZodValidationPipe } from '../../common/zod-validation.pipe';
import { AuthGuard } from '../auth/auth.guard';
import { RateLimit, RateLimitGuard } from '../auth/rate-limit.guard';
import { pageQuerySchema, type PageQuery } from '../../common/page-query';
import { StoreSyncsService } from './store-syncs.service';
import { ApiDoc } from '../../common/api-doc.decorator';
import { storeProductPageSchema } from './store-sync-view';

/** A store's online products as its syncs last saw them (read-only; syncs write them). */
@Controller('v1/workspaces/:workspaceId/stores/:storeId/products')
@UseGuards(AuthGuard, RateLimitGuard)
@RateLimit('user')
export class StoreProductsController {
  constructor(private readonly syncs: StoreSyncsService) {}

  @Get()
  @ApiDoc({
    summary: "The store's online products as its syncs last saw them",
    response: storeProductPageSchema,
  })
  list(
    @WorkspaceAuth() auth: WorkspaceAuthContext,
    @Param('storeId', new ParseIdPipe('store')) storeId: string,
    @Query(new ZodValidationPipe(pageQuerySchema)) query: PageQuery,
  ) {
    return this.syncs.listProducts(auth, storeId, query);
  }
}
