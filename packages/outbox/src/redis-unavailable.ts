/**
 * Whether an error from Redis means Redis cannot take writes right now, rather than that
 * something is wrong with the job: a lost connection or a timeout, and the replies of a server
 * that still answers PING but refuses writes — maxmemory under `noeviction` (OOM), a replica
 * after a failover (READONLY), a failed RDB save (MISCONF), a dataset still loading, a busy
 * script. An add that failed this way is tried again later without counting an attempt.
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  if (REFUSING_REPLY.test(error.message)) return true;
  if (CONNECTION_MESSAGES.some((m) => error.message.startsWith(m))) return true;
  // A MULTI discarded at EXEC (EXECABORT) carries the refusals of its queued commands.
  const previous = (error as { previousErrors?: unknown }).previousErrors;
  return Array.isArray(previous) && previous.some(isRedisUnavailable);
}

const REFUSING_REPLY = /^(OOM|READONLY|MISCONF|LOADING|BUSY|MASTERDOWN|NOREPLICAS|CLUSTERDOWN|TRYAGAIN)\b/;

// ioredis' own messages for a connection that is gone, an offline queue it may not use, a timeout.
const CONNECTION_MESSAGES = ['Connection is closed.', 'Command timed out', "Stream isn't writeable"];

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
