import { z } from 'zod';

export const createPublicationSchema = z.strictObject({
  draftId: z.uuid(),
  revision: z.number().int().min(1).max(999_999_999),
  storeId: z.uuid(),
});
export type CreatePublicationInput = z.infer<typeof createPublicationSchema>;
