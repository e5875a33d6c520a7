import { z } from 'zod';

export const createUploadSchema = z.strictObject({
  // A display name only (never a storage path): no separators or control characters.
  filename: z
    .string()
    .trim()
    .min(1)
    .max(255)
    .refine(
      (name) =>
        ![...name].some((c) => c === '/' || c === '\\' || c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f),
      'no path separators or control characters',
    ),
  contentType: z.string().min(1).max(100),
  size: z.number().int().positive(),
});
export type CreateUpload = z.infer<typeof createUploadSchema>;

export const completeSchema = z.strictObject({}).optional();

export const listQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(300).optional(),
});
