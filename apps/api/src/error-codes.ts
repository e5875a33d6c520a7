import { HTTP_ERRORS } from './common/domain-errors';
import { mergeCatalogues, type CodeOf } from './common/error-catalogue';
import { AUTH_ERRORS } from './modules/auth/auth.errors';
import { IDEMPOTENCY_ERRORS } from './modules/idempotency/idempotency.errors';
import { MATERIAL_TRANSFER_ERRORS } from './modules/material-transfers/material-transfers.errors';
import { MEDIA_ERRORS } from './modules/media/media.errors';
import { PRODUCT_DRAFT_ERRORS } from './modules/product-drafts/product-drafts.errors';
import { PUBLICATION_ERRORS } from './modules/publications/publications.errors';
import { RECORD_ERRORS } from './modules/records/records.errors';
import { STORE_SYNC_ERRORS } from './modules/store-syncs/store-syncs.errors';
import { STORE_ERRORS } from './modules/stores/stores.errors';
import { WORKSPACE_ERRORS } from './modules/workspaces/workspaces.errors';

/**
 * Every error code the API answers, with its status and description: one catalogue per feature,
 * merged here (a code declared twice does not compile). ProblemDetailsFilter, the request-body
 * parsers and the OpenAPI document are handed this table by app.factory.ts. A new feature's
 * catalogue is added to this list.
 */
export const ERROR_CODES = mergeCatalogues(
  HTTP_ERRORS,
  AUTH_ERRORS,
  WORKSPACE_ERRORS,
  IDEMPOTENCY_ERRORS,
  RECORD_ERRORS,
  PRODUCT_DRAFT_ERRORS,
  STORE_ERRORS,
  PUBLICATION_ERRORS,
  STORE_SYNC_ERRORS,
  MEDIA_ERRORS,
  MATERIAL_TRANSFER_ERRORS,
);

export type ErrorCode = CodeOf<typeof ERROR_CODES>;
