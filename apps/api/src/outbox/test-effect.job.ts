import type { Database } from '@listing/db';
import { defineJob, OutboxHandler, type JobContext } from '@listing/outbox';
import { sql } from '@listing/db';
import { z } from 'zod';

/**
 * A test-only job, registered by the worker only when NODE_ENV=test and OUTBOX_TEST_JOBS=1. Its
 * effect is database-only and NOT idempotent by itself (a plain insert): only the inbox keeps it
 * exactly-once. The test creates the table `outbox_test_effects`. In mode `fail` it always throws
 * an error carrying secrets, to prove dead-lettering and redaction.
 */
export const testEffectJob = defineJob({
  name: 'outbox.test-effect',
  queue: 'outbox-test',
  schema: z.object({ marker: z.string().min(1).max(200) }),
});

export class TestEffectHandlers {
  constructor(
    private readonly db: Database,
    private readonly mode: 'ok' | 'fail',
  ) {}

  @OutboxHandler(testEffectJob)
  async apply(payload: { marker: string }, context: JobContext): Promise<{ applied: true }> {
    if (this.mode === 'fail') {
      throw new Error(
        `provider rejected ${payload.marker}: GET https://files.example/o?X-Amz-Signature=deadbeef01 token=s3cr3t-value`,
      );
    }
    await this.db.executor.execute(sql`
      insert into outbox_test_effects (workspace_id, event_id, marker, started_at)
      values (app_current_workspace(), ${context.eventId}, ${payload.marker}, ${new Date(context.job.processedOn ?? Date.now()).toISOString()}::timestamptz)`);
    return { applied: true };
  }
}
