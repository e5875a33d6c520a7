import { type CanActivate, type ExecutionContext, Inject, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';
import { RateLimitedError } from '../../common/domain-errors';
import type { AuthContext } from '../../common/request-context';
import { RateLimiter } from './rate-limiter';

export type RateLimitBucket = 'auth' | 'user';
const RATE_LIMIT = 'listing:rate-limit';
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * `auth`: per client address and route. `user`: per authenticated user, reads (GET, HEAD, OPTIONS) and
 * writes counted apart, so polling an operation never uses up the budget for writes.
 */
export const RateLimit = (bucket: RateLimitBucket) => SetMetadata(RATE_LIMIT, bucket);

/**
 * The buckets of the whole process, one provider (AuthModule). Not kept in the guard: Nest makes
 * a guard named in @UseGuards once per module that uses it, so limiters held by the guard gave
 * every module its own budget (ten modules, ten times the limit).
 */
@Injectable()
export class RateLimits {
  readonly auth: RateLimiter;
  readonly reads: RateLimiter;
  readonly writes: RateLimiter;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.auth = new RateLimiter(config.RATE_LIMIT_AUTH_PER_MINUTE);
    this.reads = new RateLimiter(config.RATE_LIMIT_READS_PER_MINUTE);
    this.writes = new RateLimiter(config.RATE_LIMIT_WRITES_PER_MINUTE);
  }
}

/** Runs after AuthGuard and before validation and idempotency: a 429 is never cached. */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly limiters: RateLimits,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const bucket =
      this.reflector.get<RateLimitBucket | undefined>(RATE_LIMIT, context.getHandler()) ??
      this.reflector.get<RateLimitBucket | undefined>(RATE_LIMIT, context.getClass());
    if (!bucket) return true;
    const request = context
      .switchToHttp()
      .getRequest<{ ip: string; url: string; method: string; auth?: AuthContext }>();
    const wait =
      bucket === 'auth'
        ? this.limiters.auth.take(`${request.ip} ${request.url.split('?')[0]}`)
        : this.limiters[READ_METHODS.has(request.method) ? 'reads' : 'writes'].take(
            request.auth?.userId ?? request.ip,
          );
    if (wait > 0) throw new RateLimitedError(wait);
    return true;
  }
}
