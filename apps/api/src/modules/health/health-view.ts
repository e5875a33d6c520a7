import { z } from 'zod';
import { named } from '../../common/api-schemas';

export const livenessSchema = named('Liveness', z.object({ status: z.literal('ok') }));

export const readinessSchema = named(
  'Readiness',
  z.object({
    status: z.enum(['ok', 'unavailable', 'stopping']).describe('`stopping`: the process is draining'),
    checks: z.object({ postgres: z.boolean(), redis: z.boolean() }),
  }),
  'Whether PostgreSQL and Redis answer within a second: 200 when both do, else 503 with the same body',
);
