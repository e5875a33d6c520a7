import { IdempotentResponse } from '@listing/idempotency';

/** What a route needs of Fastify's reply to name the operation it accepted. */
export interface LocationReply {
  header(name: string, value: string): unknown;
}

/**
 * The answer of an async command: 202 with `{ …, operation }` and `Location` naming the
 * operation to poll (RFC 9110 §15.3.3), the same on the first answer and on every replay.
 */
export function acceptedResponse<R extends { operation: { id: string } }>(
  reply: LocationReply,
  workspaceId: string,
  outcome: { result: R; replayed: boolean },
): IdempotentResponse<R> {
  reply.header('location', `/v1/workspaces/${workspaceId}/operations/${outcome.result.operation.id}`);
  return new IdempotentResponse(outcome.result, outcome.replayed);
}
