import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { PROBLEM_JSON, problemOf } from '../../common/problem-details.filter';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Bearer `<ADMIN_TOKEN>` (scripts) or Basic with the token as password (browsers prompt for it).
 * Digests are compared in constant time, so neither length nor prefix leaks through timing.
 */
export function adminAuthorized(header: string | undefined, token: string): boolean {
  if (!header) return false;
  let presented: string | null = null;
  const bearer = /^Bearer\s+(.+)$/i.exec(header);
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header);
  if (bearer) presented = bearer[1]!.trim();
  else if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    presented = colon >= 0 ? decoded.slice(colon + 1) : null;
  }
  return presented !== null && timingSafeEqual(digest(presented), digest(token));
}

/** 401 problem+json with a Basic challenge (browsers prompt; scripts send Bearer). */
export function sendUnauthenticated(reply: FastifyReply, realm: string, detail: string): FastifyReply {
  return reply
    .code(401)
    .header('www-authenticate', `Basic realm="${realm}", charset="UTF-8"`)
    .header('content-type', PROBLEM_JSON)
    .send(JSON.stringify(problemOf('UNAUTHENTICATED', detail)));
}
