import {
  type CanActivate,
  type ExecutionContext,
  Inject,
  Injectable,
  type OnApplicationShutdown,
  type OnModuleInit,
  SetMetadata,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { connectRedis, type RedisClient } from '@listing/outbox';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';
import { redisTarget } from '../../config/redis-config';
import { RateLimitedError } from '../../common/domain-errors';
import type { AuthContext } from '../../common/request-context';
import { clientSubject } from './client-address';
import { RateLimiter } from './rate-limiter';

export type RateLimitBucket = 'auth' | 'login' | 'user';
const RATE_LIMIT = 'listing:rate-limit';
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * `auth`: per client (its address; IPv6 by /64) and route. `login`: `auth`, and per account (the
 * email sent) whatever the address, so many addresses cannot guess one password; a login that
 * succeeds gives its attempt back (AuthController), so nobody is locked out by logging in. `user`: per authenticated user, reads (GET, HEAD, OPTIONS) and writes
 * counted apart, so polling an operation never uses up the budget for writes.
 */
export const RateLimit = (bucket: RateLimitBucket) => SetMetadata(RATE_LIMIT, bucket);

/**
 * The buckets of the whole process, one provider (AuthModule). Not kept in the guard: Nest makes
 * a guard named in @UseGuards once per module that uses it, so limiters held by the guard gave
 * every module its own budget (ten modules, ten times the limit).
 *
 * `auth` (login, register, refresh: the brute-force target) is shared by every API process through
 * Redis (rate-limiter-flexible, a fixed one-minute window per client and route), so adding API
 * processes does not multiply an attacker's guesses. While Redis is unreachable it falls back at
 * once to a bucket in this process's memory (per-process limits, not none, and no waiting on a
 * dead connection). `reads` and `writes` sit on every other request and stay in process memory.
 */
@Injectable()
export class RateLimits implements OnModuleInit, OnApplicationShutdown {
  readonly auth: RateLimiterRedis;
  readonly loginAccount: RateLimiterRedis;
  readonly reads: RateLimiter;
  readonly writes: RateLimiter;
  private readonly redis: RedisClient;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.redis = connectRedis(redisTarget(config), {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 500,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(100 * times, 2000),
      // ioredis waits this long on a socket that is already closed (Redis down) before a
      // disconnect lets the process exit; 2 s by default.
      disconnectTimeout: 200,
    });
    this.redis.on('error', () => undefined); // the memory fallback takes over; readiness reports Redis
    const shared = (name: string, points: number) =>
      new RateLimiterRedis({
        storeClient: this.redis,
        keyPrefix: `${config.BULLMQ_PREFIX}:rate-limit:${name}`,
        points,
        duration: 60,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory({ points, duration: 60 }),
      });
    this.auth = shared('auth', config.RATE_LIMIT_AUTH_PER_MINUTE);
    this.loginAccount = shared('login-account', config.RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_MINUTE);
    this.reads = new RateLimiter(config.RATE_LIMIT_READS_PER_MINUTE);
    this.writes = new RateLimiter(config.RATE_LIMIT_WRITES_PER_MINUTE);
  }

  /**
   * Connects before the API listens, so the first logins after a start are not counted in memory
   * only. Waits at most 2 s: an API whose Redis is down still starts (and limits per process).
   */
  async onModuleInit(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.redis.connect().catch(() => undefined),
      new Promise((resolve) => (timer = setTimeout(resolve, 2000))),
    ]);
    clearTimeout(timer);
  }

  /**
   * Takes one login attempt of the account (atomically, so concurrent guesses cannot all slip
   * in); 0 when allowed, else the seconds to wait. A login that succeeds gives it back.
   */
  takeLoginAttempt(email: string): Promise<number> {
    return this.takeShared(this.loginAccount, accountKey(email));
  }

  /** Gives back the attempt of a login that succeeded: an owner logging in never locks the account. */
  async refundLoginAttempt(email: string): Promise<void> {
    await this.loginAccount.reward(accountKey(email), 1).catch(() => undefined);
  }

  /** Takes one token of a shared bucket for `key`; returns 0 when allowed, else the seconds to wait. */
  async takeShared(limiter: RateLimiterRedis, key: string): Promise<number> {
    try {
      await limiter.consume(key);
      return 0;
    } catch (rejection) {
      // A RateLimiterRes means no points left. Redis errors never get here (the memory
      // fallback answers instead), so anything else is a defect: let it surface.
      if (rejection instanceof RateLimiterRes) return Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw rejection;
    }
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }
}

/** Runs after AuthGuard and before validation and idempotency: a 429 is never cached. */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly limiters: RateLimits,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const bucket =
      this.reflector.get<RateLimitBucket | undefined>(RATE_LIMIT, context.getHandler()) ??
      this.reflector.get<RateLimitBucket | undefined>(RATE_LIMIT, context.getClass());
    if (!bucket) return true;
    const request = context.switchToHttp().getRequest<{
      ip: string;
      url: string;
      method: string;
      body?: unknown;
      routeOptions?: { url?: string };
      auth?: AuthContext;
    }>();
    if (bucket === 'user') {
      const limiter = this.limiters[READ_METHODS.has(request.method) ? 'reads' : 'writes'];
      const wait = limiter.take(request.auth?.userId ?? clientSubject(request.ip));
      if (wait > 0) throw new RateLimitedError(wait);
      return true;
    }
    // The route's template, not the raw path: /v1/auth/logi%6E reaches the same handler, and must
    // not get a budget of its own.
    const route = request.routeOptions?.url ?? request.url.split('?')[0];
    let wait = await this.limiters.takeShared(this.limiters.auth, `${clientSubject(request.ip)} ${route}`);
    const account = bucket === 'login' ? loginEmail(request.body) : null;
    if (wait === 0 && account) wait = await this.limiters.takeLoginAttempt(account);
    if (wait > 0) throw new RateLimitedError(wait);
    return true;
  }
}

/** The email a login names, or null when it names none. */
function loginEmail(body: unknown): string | null {
  const email = (body as { email?: unknown } | null | undefined)?.email;
  if (typeof email !== 'string' || email.length === 0 || email.length > 320) return null;
  return email;
}

/** An account's key: its email as the lookup compares it. */
function accountKey(email: string): string {
  return email.trim().toLowerCase();
}
