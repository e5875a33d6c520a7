import { z } from 'zod';

/**
 * The body of a command that takes none: absent, or `{}`. Anything else is a 422, as for every
 * strict body (docs/api.md), rather than ignored: on a keyed route an ignored body would still
 * count in the Idempotency-Key's fingerprint.
 */
export const emptyBodySchema = z.strictObject({}).optional();
