import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import { Database } from '@listing/db';
import type { RedisClient } from '@listing/outbox';
import { REDIS } from '../../infrastructure/infrastructure.module';
import { checkReadiness } from '../../ops/health-probe';
import { ApiLifecycle } from '../../ops/ops.module';
import { ApiDoc } from '../../common/api-doc.decorator';
import { livenessSchema, readinessSchema } from './health-view';

@Controller('health')
export class HealthController {
  constructor(
    private readonly db: Database,
    @Inject(REDIS) private readonly redis: RedisClient,
    private readonly lifecycle: ApiLifecycle,
  ) {}

  /** The process is up and serving. */
  @Get('live')
  @HttpCode(200)
  @ApiDoc({ summary: 'The process is up', response: livenessSchema })
  live() {
    return { status: 'ok' as const };
  }

  /**
   * PostgreSQL and Redis both answer within a second, and the process is not draining. Fails
   * fast: a Redis client that is reconnecting counts as down instead of queueing the PING.
   */
  @Get('ready')
  @ApiDoc({
    summary: 'PostgreSQL and Redis answer, and the process is not draining',
    response: readinessSchema,
    alsoAnswers: [503],
  })
  async ready(@Res({ passthrough: true }) reply: { status(code: number): unknown }) {
    // The shared client connects lazily: the first probe may be what opens it.
    if (this.redis.status === 'wait') await this.redis.connect().catch(() => undefined);
    const report = await checkReadiness(this.db, this.redis);
    // The answer is the report itself, not a problem+json error (the filter maps unknown 5xx
    // exceptions to 500): load balancers and orchestrators key on the 503.
    if (this.lifecycle.draining) {
      reply.status(503);
      return { ...report, status: 'stopping' as const };
    }
    if (report.status !== 'ok') reply.status(503);
    return report;
  }
}
