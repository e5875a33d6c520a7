import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetchSource, SourceFetchError } from '../../src/modules/material-transfers/source-fetcher';
import {
  checkSourceUrl,
  isNonPublicAddress,
  parseAllowlist,
  sourceKeyOf,
  SourceRejectedError,
} from '../../src/modules/material-transfers/source-url-guard';

describe('source URL guard', () => {
  const allow = parseAllowlist('cdn.example.com, 127.0.0.1:4010, images.example.org:8443');

  it('allows only allowlisted host[:port] over http(s)', () => {
    expect(checkSourceUrl('https://cdn.example.com/a.png', allow).href).toBe('https://cdn.example.com/a.png');
    expect(checkSourceUrl('http://127.0.0.1:4010/m.png#frag', allow).href).toBe(
      'http://127.0.0.1:4010/m.png',
    );
    expect(checkSourceUrl('https://images.example.org:8443/x.jpg', allow).hostname).toBe(
      'images.example.org',
    );
    const refused = [
      'http://127.0.0.1:4011/m.png', // other port on an allowlisted address
      'http://169.254.169.254/latest/meta-data/',
      'https://cdn.example.com:8443/a.png', // a port-less entry allows the default port only
      'https://evil.example.com/a.png',
      'https://cdn.example.com.evil.test/a.png',
      'ftp://cdn.example.com/a.png',
      'file:///etc/passwd',
      'https://user:pw@cdn.example.com/a.png',
      'not a url',
    ];
    for (const url of refused) {
      expect(() => checkSourceUrl(url, allow)).toThrow(SourceRejectedError);
    }
  });

  it('classifies non-public addresses, including IPv4 embedded in IPv6', () => {
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:a9fe:a9fe', // 169.254.169.254
      '64:ff9b::10.0.0.1',
      'not-an-ip',
    ]) {
      expect({ ip, blocked: isNonPublicAddress(ip) }).toEqual({ ip, blocked: true });
    }
    for (const ip of ['8.8.8.8', '93.184.216.34', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect({ ip, blocked: isNonPublicAddress(ip) }).toEqual({ ip, blocked: false });
    }
  });

  it('derives a source key without signatures or fragments (dedupe key, safe to show)', () => {
    const url = new URL(
      'HTTPS://CDN.example.com:443/p/a.png?w=10&X-Amz-Signature=abc&X-Amz-Credential=k&Expires=1#x',
    );
    expect(sourceKeyOf(url)).toBe('https://cdn.example.com/p/a.png?w=10');
    expect(sourceKeyOf(new URL('https://cdn.example.com/a.png?sig=1&se=2'))).toBe(
      'https://cdn.example.com/a.png',
    );
    // Signed URLs of other clouds and CDNs; `key` and `w` identify the object and stay.
    for (const signed of [
      'https://b.oss-cn-hangzhou.aliyuncs.com/a.png?OSSAccessKeyId=AK&Expires=1&Signature=S&security-token=STS',
      'https://b.cos.ap-shanghai.myqcloud.com/a.png?q-sign-algorithm=sha1&q-ak=AK&q-sign-time=1;2&q-key-time=1;2&q-header-list=host&q-url-param-list=&q-signature=S&x-cos-security-token=T',
      'https://b.obs.cn-north-4.myhuaweicloud.com/a.png?AccessKeyId=AK&Expires=1&Signature=S&x-obs-security-token=T',
      'https://cdn.example.com/a.png?auth_key=1-0-0-S&sign=S&X-Tos-Signature=S&SessionToken=T&client_secret=C',
      'https://cdn.example.com/a.png?__token__=exp=1~acl=/*~hmac=S&hdnts=st=1~hmac=S',
      'https://cdn.example.com/a.png?jwt=eyJ.S&hmac=S&verify=1-S',
    ]) {
      const key = sourceKeyOf(new URL(signed));
      expect(key).toMatch(/^https:\/\/[^?]+\/a\.png$/);
    }
    expect(sourceKeyOf(new URL('https://cdn.example.com/get?key=images/a.png&w=10&q-signature=S'))).toBe(
      'https://cdn.example.com/get?key=images%2Fa.png&w=10',
    );
    // Names that only contain a secret-sounding word identify the object: kept.
    expect(sourceKeyOf(new URL('https://cdn.example.com/get?tokenId=7&secretary=x&access_token=T'))).toBe(
      'https://cdn.example.com/get?tokenId=7&secretary=x',
    );
  });

  it('refuses a malformed allowlist entry without echoing it (it may hold credentials)', () => {
    expect(() => parseAllowlist('cdn.example.com/path')).toThrow(/MATERIAL_SOURCE_ALLOWLIST: entry 1 /);
    for (const spec of ['ok.example.com,user:s3cret@cdn.example.com', 'ok.example.com,s3cret host']) {
      let message = '';
      try {
        parseAllowlist(spec);
      } catch (error) {
        message = `${(error as Error).message} ${JSON.stringify(error)}`;
      }
      expect(message).toMatch(/entry 2 /);
      expect(message).not.toContain('s3cret');
    }
  });

  it('refuses a source whose key (the URL without its signature) is longer than an index key may be', () => {
    const allow = parseAllowlist('cdn.example.com');
    const path = 'é'.repeat(1000); // 1,000 characters, 6,000 once percent-encoded
    expect(() => sourceKeyOf(checkSourceUrl(`https://cdn.example.com/${path}`, allow))).toThrow(
      /longer than 2048/,
    );
    // A long signature is fine: only the key is indexed.
    const signed = checkSourceUrl(
      `https://cdn.example.com/a.png?X-Amz-Security-Token=${'t'.repeat(4000)}`,
      allow,
    );
    expect(sourceKeyOf(signed)).toBe('https://cdn.example.com/a.png');
    expect(sourceKeyOf(new URL(`https://cdn.example.com/${'a'.repeat(2000)}`))).toHaveLength(2024);
  });
});

describe('fetchSource', () => {
  let server: Server;
  let port: number;
  let hits = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits += 1;
      if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'image/png' });
        res.end(Buffer.alloc(5000));
        return;
      }
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const options = (allowlist: string, maxBytes = 1_000_000) => ({
    allowlist: parseAllowlist(allowlist),
    maxRedirects: 2,
    maxBytes,
    timeoutMs: 3000,
  });

  it('refuses an allowlisted host NAME that resolves to loopback, before any connection', async () => {
    hits = 0;
    const error = await fetchSource(`http://localhost:${port}/a.png`, options(`localhost:${port}`)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SourceFetchError);
    expect(error).toMatchObject({ code: 'SOURCE_NOT_ALLOWED', permanent: true });
    expect(hits).toBe(0);
  });

  it('fetches from an explicitly allowlisted IP literal and bounds the size by counting bytes', async () => {
    const ok = await fetchSource(`http://127.0.0.1:${port}/a.png`, options(`127.0.0.1:${port}`));
    expect(ok.contentType).toBe('image/png');
    expect(ok.body.length).toBe(8);
    await expect(
      fetchSource(`http://127.0.0.1:${port}/big`, options(`127.0.0.1:${port}`, 1024)),
    ).rejects.toMatchObject({ code: 'MEDIA_TOO_LARGE', permanent: true });
  });
});
