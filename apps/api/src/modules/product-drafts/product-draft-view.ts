import type { z } from 'zod';
import { pageOf } from '../../common/api-schemas';
import {
  featureExecutionResultOf,
  recordViewOf,
  type FeatureExecutionResult,
  type RecordView,
} from '../records/record-view';
import { draftDataSchema } from './product-draft.dto';

/** A product draft: one revision of the record, its payload as the draft schema admits it. */
export const productDraftViewSchema = recordViewOf(
  'ProductDraft',
  draftDataSchema,
  'One revision of a product draft (GET answers the current one; the ETag is its revision)',
);
export type ProductDraftView = z.output<typeof productDraftViewSchema>;

export const productDraftPageSchema = pageOf('ProductDraftPage', productDraftViewSchema);

export const productDraftFeatureResultSchema = featureExecutionResultOf(
  'ProductDraftFeatureExecution',
  productDraftViewSchema,
);
export type ProductDraftFeatureResult = z.output<typeof productDraftFeatureResultSchema>;

/**
 * The kernel's view typed as a draft. No parse: every revision's payload was validated by
 * draftDataSchema when it was written (create, PATCH, features and AI results merge into it).
 */
export const asDraft = (view: RecordView): ProductDraftView => view as RecordView<ProductDraftView['data']>;

export const asDraftExecution = (result: FeatureExecutionResult): ProductDraftFeatureResult => ({
  record: asDraft(result.record),
  execution: result.execution,
});
