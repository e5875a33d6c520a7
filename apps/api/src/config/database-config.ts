import { z } from 'zod';

/**
 * DATABASE_PREPARED_STATEMENTS: 1 (default) lets the hottest statements run as named server-side
 * prepared statements (parsed and planned once per connection). 0 sends them unnamed, for a
 * pooler in transaction mode that cannot keep a connection's prepared statements (PgBouncer
 * before 1.21, Debian 12's 1.18 among them; see docs/scaling.md). Shared by every role's config.
 */
export const preparedStatementsSetting = z
  .enum(['0', '1'])
  .default('1')
  .transform((v) => v === '1');
