import { z } from 'zod';
import { idSchema } from '../../common/id-schema';

export const createAiTaskSchema = z
  .strictObject({
    kind: z.enum(['text', 'category', 'image']),
    draftId: idSchema,
    revision: z.number().int().min(1).max(999_999_999),
    /** text only: which field the generated text replaces (default description). */
    target: z.enum(['title', 'description']).optional(),
    prompt: z.string().trim().min(1).max(500).optional(),
  })
  .refine((b) => b.kind === 'text' || b.target === undefined, {
    message: 'target applies to text tasks only',
    path: ['target'],
  });
export type CreateAiTaskInput = z.infer<typeof createAiTaskSchema>;
