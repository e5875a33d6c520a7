import { DomainError, defineErrors } from '../../common/error-catalogue';

export const PRODUCT_DRAFT_ERRORS = defineErrors({
  FEATURE_NOT_FOUND: {
    status: 404,
    description: 'No product-draft feature has this id (see the features a draft offers).',
  },
});

export class UnknownFeatureError extends DomainError<typeof PRODUCT_DRAFT_ERRORS> {
  readonly code = 'FEATURE_NOT_FOUND';
  /** `known`: the feature ids there are. The one sent is not echoed: it is raw path text. */
  constructor(known: readonly string[]) {
    super(`no such feature; the features are: ${known.join(', ')}`);
  }
}
