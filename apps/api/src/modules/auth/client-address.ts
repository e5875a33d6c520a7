import ipaddr from 'ipaddr.js';

/**
 * The rate-limit subject of a client address. IPv4 (also written IPv4-mapped, `::ffff:a.b.c.d`)
 * as it is; IPv6 by its /64, the smallest block one subscriber gets: a host holds a whole /64 and
 * could otherwise take a fresh address, and a fresh budget, for every try.
 */
export function clientSubject(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}
