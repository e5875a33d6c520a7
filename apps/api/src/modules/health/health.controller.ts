import { Controller, Get, HttpCode, Inject, ServiceUnavailableException } from '@nestjs/common';
import { Database } from '@listing/db';
import { sql } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import { REDIS } from '../../infrastructure/infrastructure.module';

@Controller('health')
export class HealthController {
  constructor(
    private readonly db: Database,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  /** The process is up and serving. */
  @Get('live')
  @HttpCode(200)
  live() {
    return { status: 'ok' };
  }

  /** PostgreSQL and Redis both answer. */
  @Get('ready')
  async ready() {
    const [postgres, redis] = await Promise.all([
      probe(() => this.db.executor.execute(sql`select 1`)),
      probe(() => this.redis.ping()),
    ]);
    const body = { status: postgres && redis ? 'ok' : 'unavailable', checks: { postgres, redis } };
    if (!postgres || !redis) throw new ServiceUnavailableException(body);
    return body;
  }
}

async function probe(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 1000)),
    ]);
    return true;
  } catch {
    return false;
  }
}
