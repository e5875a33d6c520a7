import { Inject, Injectable, Module } from '@nestjs/common';
import { Database, sql } from '@listing/db';
import { DeclareJobs, defineJob, OutboxHandler, type JobContext } from '@listing/outbox';
import { z } from 'zod';
import { OUTBOX_CONFIG, type OutboxConfig } from '../config/outbox-config';

/**
 * A test-only job, declared by the worker only when NODE_ENV=test and OUTBOX_TEST_JOBS=1. Its
 * effect is database-only and NOT idempotent by itself (a plain insert): only the inbox keeps it
 * exactly-once. The test creates the table `outbox_test_effects`. In mode `fail` it always throws
 * an error carrying secrets, to prove dead-lettering and redaction.
 */
export const testEffectJob = defineJob({
  name: 'outbox.test-effect',
  queue: 'outbox-test',
  schema: z.object({ marker: z.string().min(1).max(200) }),
});

@Injectable()
export class TestEffectJob {
  constructor(
    private readonly db: Database,
    @Inject(OUTBOX_CONFIG) private readonly config: OutboxConfig,
  ) {}

  @OutboxHandler(testEffectJob)
  async apply(payload: { marker: string }, context: JobContext): Promise<{ applied: true }> {
    if (this.config.OUTBOX_TEST_EFFECT_MODE === 'fail') {
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

/** The test job's module, imported by the worker role only under the test switches. */
@DeclareJobs(testEffectJob)
@Module({ providers: [TestEffectJob] })
export class TestEffectJobModule {}
