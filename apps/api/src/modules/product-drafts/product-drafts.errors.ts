import { DomainError, defineErrors } from '../../common/error-catalogue';

export const PRODUCT_DRAFT_ERRORS = defineErrors({
  FEATURE_NOT_FOUND: {
    status: 404,
    description: 'No product-draft feature has this id (see the features a draft offers).',
  },
});

export class UnknownFeatureError extends DomainError<typeof PRODUCT_DRAFT_ERRORS> {
  readonly code = 'FEATURE_NOT_FOUND';
  constructor(featureId: string) {
    super(`unknown feature ${featureId}`);
  }
}
