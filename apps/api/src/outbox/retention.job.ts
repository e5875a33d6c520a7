import { Inject, Injectable } from '@nestjs/common';
import { OutboxHandler, retentionJob, RetentionService, type OutboxLogger } from '@listing/outbox';
import { OUTBOX_LOGGER } from './outbox-roles.tokens';

/** The scheduled retention run (one repeatable job per deployment; see WorkerProcess). */
@Injectable()
export class RetentionJob {
  constructor(
    private readonly retention: RetentionService,
    @Inject(OUTBOX_LOGGER) private readonly logger: OutboxLogger,
  ) {}

  @OutboxHandler(retentionJob)
  async run() {
    const report = await this.retention.run();
    this.logger.info('retention run', { ...report });
    return report;
  }
}
