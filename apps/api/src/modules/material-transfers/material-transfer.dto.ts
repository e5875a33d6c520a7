import { z } from 'zod';

export const createTransferSchema = z.strictObject({
  sourceUrl: z.string().trim().min(1).max(4096),
});
export type CreateTransfer = z.infer<typeof createTransferSchema>;

export const listQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(300).optional(),
});
