import { z } from 'zod';

/** Keyset pagination shared by the capability lists: newest first (cursors: page-cursor.ts). */
export const pageQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
});
export type PageQuery = z.infer<typeof pageQuerySchema>;
