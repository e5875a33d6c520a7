import { type CanActivate, type ExecutionContext, Inject, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';
import { RateLimitedError } from '../../common/domain-errors';
import type { AuthContext } from '../../common/request-context';
import { RateLimiter } from './rate-limiter';

export type RateLimitBucket = 'auth' | 'writes';
const RATE_LIMIT = 'listing:rate-limit';

/** `auth`: per client address and route. `writes`: per authenticated user. */
export const RateLimit = (bucket: RateLimitBucket) => SetMetadata(RATE_LIMIT, bucket);

/** Runs after AuthGuard and before validation and idempotency: a 429 is never cached. */
@Injectable()
export class RateLimitGuard implements CanActivate {
  private readonly limiters: Record<RateLimitBucket, RateLimiter>;

  constructor(
    private readonly reflector: Reflector,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.limiters = {
      auth: new RateLimiter(config.RATE_LIMIT_AUTH_PER_MINUTE),
      writes: new RateLimiter(config.RATE_LIMIT_WRITES_PER_MINUTE),
    };
  }

  canActivate(context: ExecutionContext): boolean {
    const bucket =
      this.reflector.get<RateLimitBucket | undefined>(RATE_LIMIT, context.getHandler()) ??
      this.reflector.get<RateLimitBucket | undefined>(RATE_LIMIT, context.getClass());
    if (!bucket) return true;
    const request = context.switchToHttp().getRequest<{ ip: string; url: string; auth?: AuthContext }>();
    const key =
      bucket === 'auth' ? `${request.ip} ${request.url.split('?')[0]}` : (request.auth?.userId ?? request.ip);
    const wait = this.limiters[bucket].take(key);
    if (wait > 0) throw new RateLimitedError(wait);
    return true;
  }
}
