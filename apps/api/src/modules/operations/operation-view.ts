import { z } from 'zod';
import { instant, named, uuid } from '../../common/api-schemas';

/**
 * Why a failed operation failed. Documented as the enum of every module's `*.failures.ts`
 * (src/failure-codes.ts), which the OpenAPI generator puts in place of this plain string.
 */
export const operationFailureCodeSchema = named('OperationFailureCode', z.string());

/** What a client may show of a failure: our code and message, never the provider's text. */
export const operationErrorSchema = named(
  'OperationError',
  z.object({
    code: operationFailureCodeSchema,
    message: z.string().describe('Safe to show: ours, never the provider text'),
  }),
);

export const operationStatusSchema = z.enum(['pending', 'running', 'succeeded', 'failed']);
export type OperationStatus = z.output<typeof operationStatusSchema>;

/** What GET .../operations/{id} returns. `error` is safe for clients (code + message). */
export const operationViewSchema = named(
  'Operation',
  z.object({
    id: uuid(),
    kind: z.string().describe('What the work does, e.g. `publication.publish`'),
    status: operationStatusSchema,
    resourceType: z.string(),
    resourceId: uuid(),
    error: operationErrorSchema.nullable(),
    createdAt: instant(),
    updatedAt: instant(),
    completedAt: instant().nullable(),
  }),
  'Accepted asynchronous work (GET /v1/workspaces/{workspaceId}/operations/{operationId})',
);
export type OperationView = z.output<typeof operationViewSchema>;

export const operationListSchema = named('OperationList', z.object({ items: z.array(operationViewSchema) }));

/**
 * The 202 body of an async command: the resource as accepted under `field`, and the operation
 * that says how the work went (its URL is the answer's Location).
 */
export function acceptedOf<K extends string, T extends z.ZodType>(id: string, field: K, resource: T) {
  return named(
    id,
    z.object({ [field]: resource, operation: operationViewSchema } as { [P in K]: T } & {
      operation: typeof operationViewSchema;
    }),
  );
}
