import { z } from 'zod';

export const createTransferSchema = z.strictObject({
  // A signed URL may be long (an STS session token); only its key (source_key) is indexed.
  sourceUrl: z.string().trim().min(1).max(8192),
});
export type CreateTransfer = z.infer<typeof createTransferSchema>;

export const listQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(300).optional(),
});
