import { z } from 'zod';

/** Keyset pagination shared by the capability lists: newest first (cursors: page-cursor.ts). */
export const pageQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  // Room for every cursor the API hands out: the longest, a key cursor over a 200-unit key whose
  // every character JSON escapes (`\u0001`, 6 bytes), is 1,611 characters of base64url.
  cursor: z.string().max(2048).optional(),
});
export type PageQuery = z.infer<typeof pageQuerySchema>;
