import { z } from 'zod';
import { idSchema } from '../../common/id-schema';
import { PRODUCT_DRAFT_FEATURES } from './product-draft.features';

/** The payload of a product draft. Strict: unknown fields are a 422, never silently dropped. */
export const draftDataSchema = z.strictObject({
  title: z.string().trim().min(1).max(200),
  description: z.string().max(5000).optional(),
  sku: z.string().max(64).optional(),
  price: z
    .strictObject({
      amount: z.string().regex(/^\d{1,9}(\.\d{1,2})?$/, 'a decimal string such as "19.99"'),
      currency: z.string().regex(/^[A-Z]{3}$/, 'an ISO 4217 code'),
    })
    .optional(),
  categoryId: z.string().max(64).optional(),
  imageIds: z
    .array(idSchema)
    .max(20)
    .refine((ids) => new Set(ids).size === ids.length, 'an image is named once')
    .optional(),
  // Bounded in count too: every revision stores the whole payload again.
  attributes: z
    .record(z.string().max(64), z.string().max(500))
    .refine((a) => Object.keys(a).length <= 100, 'at most 100 attributes')
    .optional(),
});
export type DraftData = z.infer<typeof draftDataSchema>;

/** PATCH body: any subset of the fields; the merged result is validated again. */
export const draftPatchSchema = draftDataSchema
  .partial()
  .refine((p) => Object.keys(p).length > 0, 'nothing to change');
export type DraftPatch = z.infer<typeof draftPatchSchema>;

export const featureExecutionSchema = z.strictObject({}).optional();

/** The features a draft has (the path's `featureId`; another one is a 404 FEATURE_NOT_FOUND). */
export const productDraftFeatureIdSchema = z.enum(
  Object.keys(PRODUCT_DRAFT_FEATURES) as [string, ...string[]],
);

export const listQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
});
