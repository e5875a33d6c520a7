import type { Provider } from '@nestjs/common';
import { Database } from '@listing/db';
import { OutboxRepository } from '@listing/outbox';

/** The outbox engine's repository on the role's database (outbox_agent). */
export const outboxRepositoryProvider: Provider = {
  provide: OutboxRepository,
  inject: [Database],
  useFactory: (db: Database) => new OutboxRepository(db),
};
