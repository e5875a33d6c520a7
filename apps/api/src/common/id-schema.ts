import { z } from 'zod';

/**
 * A resource id in a body or query: 8-4-4-4-12 hex of any version, as PostgreSQL's uuid type and
 * path ids (ParseIdPipe) take it, so one id gets one answer wherever it is sent (z.uuid() wants RFC
 * version digits: such an id was a 422 in a body and a 404 in a path). Lower-cased as PostgreSQL
 * prints it, so code comparing ids as strings (snapshot checks, sets) sees one id once.
 */
export const idSchema = z.guid().transform((id) => id.toLowerCase());
