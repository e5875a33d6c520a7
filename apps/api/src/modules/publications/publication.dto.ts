import { z } from 'zod';
import { idSchema } from '../../common/id-schema';

export const createPublicationSchema = z.strictObject({
  draftId: idSchema,
  revision: z.number().int().min(1).max(999_999_999),
  storeId: idSchema,
});
export type CreatePublicationInput = z.infer<typeof createPublicationSchema>;

export const createPublicationUpdateSchema = z.strictObject({
  revision: z.number().int().min(1).max(999_999_999),
});
export type CreatePublicationUpdateInput = z.infer<typeof createPublicationUpdateSchema>;
