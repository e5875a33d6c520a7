import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { canonicalJson } from './canonical-json';
import { idempotencyKeyInvalid, idempotencyKeyRequired, validationFailed } from './sim-errors';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** The `Idempotency-Key` header, required on every provider-side idempotent route. */
export function requireIdempotencyKey(request: FastifyRequest): string {
  const raw = request.headers['idempotency-key'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value.trim() === '') throw idempotencyKeyRequired();
  const key = value.trim();
  if (!KEY_PATTERN.test(key)) throw idempotencyKeyInvalid();
  return key;
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** Constant-time comparison, so the admin token cannot be guessed byte by byte from timings. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Parses with zod; problems name the field and the rule, never the offending value. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) {
    throw validationFailed(parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`));
  }
  return parsed.data;
}

/** Request fingerprint: a digest of the canonical JSON, so stored records hold no body copy to compare. */
export function fingerprint(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

/** A stable 32-bit hash of a string, used to derive deterministic results from inputs. */
export function hash32(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}
