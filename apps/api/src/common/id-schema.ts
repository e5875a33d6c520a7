import { z } from 'zod';

/**
 * A resource id in a body or query: any UUID spelling, lower-cased as PostgreSQL prints it, so
 * code comparing ids as strings (snapshot checks, sets) sees one id once. Path ids: ParseIdPipe.
 */
export const idSchema = z.uuid().transform((id) => id.toLowerCase());
