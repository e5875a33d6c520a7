import { z } from 'zod';
import { instant, named, pageOf, uuid } from '../../common/api-schemas';
import { acceptedOf, operationFailureCodeSchema } from '../operations/operation-view';

export const aiTaskKindSchema = z.enum(['text', 'category', 'image']);
export type AiTaskKind = z.output<typeof aiTaskKindSchema>;
export const aiTaskStatusSchema = z.enum(['pending', 'running', 'succeeded', 'failed']);
export type AiTaskStatus = z.output<typeof aiTaskStatusSchema>;

export const aiTaskViewSchema = named(
  'AiTask',
  z.object({
    id: uuid(),
    kind: aiTaskKindSchema,
    draftId: uuid(),
    baseRevision: z.number().int(),
    target: z.enum(['title', 'description']).nullable(),
    status: aiTaskStatusSchema,
    executionId: uuid().describe("The feature execution on the draft (mode 'outbox')"),
    resultRevision: z
      .number()
      .int()
      .nullable()
      .describe('The draft revision the result produced, when it applies (text, category)'),
    result: z.record(z.string(), z.unknown()).nullable().describe("The vendor's output, once succeeded"),
    errorCode: operationFailureCodeSchema.nullable(),
    createdAt: instant(),
    completedAt: instant().nullable(),
  }),
  'An AI task on a draft',
);
export type AiTaskView = z.output<typeof aiTaskViewSchema>;

export const aiTaskPageSchema = pageOf('AiTaskPage', aiTaskViewSchema);

export const aiTaskAcceptedSchema = acceptedOf('AiTaskAccepted', 'aiTask', aiTaskViewSchema);
export type AiTaskAccepted = z.output<typeof aiTaskAcceptedSchema>;
