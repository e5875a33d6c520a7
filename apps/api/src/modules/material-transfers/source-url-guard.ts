import { BlockList, isIP } from 'node:net';

/**
 * Which source URLs a material transfer may fetch, and which addresses it may connect to.
 *
 * - Only http(s), no userinfo, and only hosts on MATERIAL_SOURCE_ALLOWLIST (`host[:port]`; an
 *   entry without a port allows the scheme's default port only). Every redirect hop is checked
 *   again.
 * - A host name must resolve to public addresses only (loopback, private, link-local, CGNAT,
 *   unique-local, multicast, documentation and reserved ranges are refused), which defeats DNS
 *   pointing an allowlisted name at an internal service. An IP-literal entry is an operator's
 *   explicit decision and may be private (tests allowlist 127.0.0.1:<port>).
 */

export interface AllowEntry {
  readonly host: string;
  readonly port: number | null;
}

export class SourceRejectedError extends Error {
  constructor(
    readonly code: 'SOURCE_NOT_ALLOWED',
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'SourceRejectedError';
  }
}

export const MAX_SOURCE_URL_LENGTH = 2048;

const reject = (reason: string) => new SourceRejectedError('SOURCE_NOT_ALLOWED', reason);

export function parseAllowlist(spec: string): AllowEntry[] {
  return spec
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)
    .map((entry, index) => {
      // The entry is never echoed: a mistyped one may hold credentials (`user:pw@host`).
      const bad = () =>
        new Error(
          `MATERIAL_SOURCE_ALLOWLIST: entry ${index + 1} is not host[:port] (no path, credentials or query)`,
        );
      let url: URL;
      try {
        url = new URL(`http://${entry}`);
      } catch {
        throw bad();
      }
      if (url.pathname !== '/' || url.username || url.password || url.search) {
        throw bad();
      }
      return { host: bareHost(url.hostname), port: url.port ? Number(url.port) : null };
    });
}

/** Hostname without IPv6 brackets, lower case. */
function bareHost(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '').toLowerCase();
}

function effectivePort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** Parses and checks one hop's URL against the scheme rules and the allowlist. */
export function checkSourceUrl(raw: string | URL, allowlist: readonly AllowEntry[]): URL {
  let url: URL;
  try {
    url = typeof raw === 'string' ? new URL(raw) : new URL(raw.href);
  } catch {
    throw reject('not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw reject('only http and https are allowed');
  if (url.username || url.password) throw reject('credentials in the URL are not allowed');
  if (!matchEntry(url, allowlist)) throw reject('the host is not on the allowlist');
  url.hash = '';
  return url;
}

function matchEntry(url: URL, allowlist: readonly AllowEntry[]): AllowEntry | undefined {
  const host = bareHost(url.hostname);
  const port = effectivePort(url);
  return allowlist.find(
    (e) =>
      e.host === host &&
      (e.port === null ? port === (url.protocol === 'https:' ? 443 : 80) : e.port === port),
  );
}

/** True when the URL's host is an IP literal that the allowlist names explicitly. */
export function isExplicitIpEntry(url: URL, allowlist: readonly AllowEntry[]): boolean {
  return isIP(bareHost(url.hostname)) !== 0 && matchEntry(url, allowlist) !== undefined;
}

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address embedded in an IPv4-mapped, -compatible or NAT64 IPv6 address, if any. */
function embeddedIpv4(ip: string): string | null {
  const lower = ip.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1]!;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return null;
}

/** True for any address a fetch of collected material must never reach by a host name. */
export function isNonPublicAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(ip);
    if (v4) return blocked.check(v4, 'ipv4');
    return blocked.check(ip, 'ipv6');
  }
  return true; // not an address at all: refuse
}

/**
 * Query parameters that make a URL a bearer credential or vary per signing: the known names of
 * S3, GCS, Azure SAS, CloudFront, Alibaba OSS (incl. STS), Tencent COS, Huawei OBS, Volcengine TOS
 * and CDN URL signing (Akamai `__token__`/`hdnts`, `jwt`, `hmac`, `verify`), and any name that
 * ends in signature, token, secret, credential or password (`SessionToken`, `client_secret`).
 * Anchored at the end: `tokenId` or `key` often name the object itself, and dropping them would
 * make two objects one source (a 409 for the second).
 */
const SIGNING_PARAM =
  /^(x-amz-.*|x-goog-.*|x-oss-.*|x-cos-.*|x-obs-.*|x-tos-.*|q-.*|signature|sig|sign|se|sp|sv|sr|st|skoid|sktid|skt|ske|sks|skv|expires|key-pair-id|policy|auth|auth_key|apikey|api_key|accesskeyid|googleaccessid|ossaccesskeyid|awsaccesskeyid|__token__|hdnts|hdnea|jwt|hmac|verify)$|(signature|token|secret|credential|credentials|password|passwd)$/i;

/**
 * The deduplication key of a source and the only form of it that leaves the transfer row:
 * lower-case scheme and host, default port dropped, fragment dropped, and signing parameters
 * (presigned URLs) removed, so re-signed links to one object are one source and no signature is
 * ever echoed or logged.
 */
export function sourceKeyOf(url: URL): string {
  const copy = new URL(url.href);
  copy.hash = '';
  for (const name of [...copy.searchParams.keys()]) {
    if (SIGNING_PARAM.test(name)) copy.searchParams.delete(name);
  }
  if (![...copy.searchParams.keys()].length) copy.search = '';
  // A unique-index key (PostgreSQL refuses index rows over ~2.7 kB). Only the key: a signed URL
  // may be far longer (an STS session token), and so may a redirect hop, which is never indexed.
  if (copy.href.length > MAX_SOURCE_URL_LENGTH) {
    throw reject(
      `the URL without its signature is longer than ${MAX_SOURCE_URL_LENGTH} characters once encoded`,
    );
  }
  return copy.href;
}
