import ipaddr from 'ipaddr.js';

/**
 * TRUST_PROXY → Fastify's `trustProxy`: unset or empty, nothing is trusted (the socket's address
 * is the client); a number, that many proxy hops; otherwise a comma-separated list of proxy
 * addresses or CIDR blocks (or proxy-addr's `loopback`, `linklocal`, `uniquelocal`) whose
 * X-Forwarded-For is believed. Returns the problem for a malformed value.
 */
export function parseTrustProxy(value: string | undefined): false | number | string[] | { problem: string } {
  const text = value?.trim() ?? '';
  if (text === '') return false;
  if (/^\d+$/.test(text)) return Number(text);
  const entries = text.split(',').map((e) => e.trim());
  const bad = entries.filter((e) => !NAMED.has(e) && !ipaddr.isValid(e) && !isCidr(e));
  if (bad.length) return { problem: `not an address, CIDR block or hop count: ${bad.join(', ')}` };
  return entries;
}

const NAMED = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isCidr(text: string): boolean {
  try {
    ipaddr.parseCIDR(text);
    return true;
  } catch {
    return false;
  }
}
