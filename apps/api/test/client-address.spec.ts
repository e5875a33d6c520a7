import { parseTrustProxy } from '../src/config/trust-proxy';
import { clientSubject } from '../src/modules/auth/client-address';

describe('clientSubject', () => {
  it('keeps IPv4 addresses, also IPv4-mapped ones', () => {
    expect(clientSubject('203.0.113.7')).toBe('203.0.113.7');
    expect(clientSubject('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('puts every address of one IPv6 /64 into one subject, and other /64s apart', () => {
    const a = clientSubject('2001:db8:1:2::1');
    expect(a).toBe('2001:db8:1:2::/64');
    expect(clientSubject('2001:0db8:0001:0002:ffff:ffff:ffff:fffe')).toBe(a);
    expect(clientSubject('2001:db8:1:3::1')).not.toBe(a);
  });

  it('leaves anything else as it is', () => {
    expect(clientSubject('not-an-ip')).toBe('not-an-ip');
  });
});

describe('parseTrustProxy', () => {
  it('unset or empty trusts nobody; a number is a hop count; else addresses, blocks and names', () => {
    expect(parseTrustProxy(undefined)).toBe(false);
    expect(parseTrustProxy(' ')).toBe(false);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('10.0.0.0/8, 127.0.0.1,loopback,fd00::/8')).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
      'loopback',
      'fd00::/8',
    ]);
  });

  it('names what is malformed', () => {
    expect(parseTrustProxy('10.0.0.0/8,proxy.internal,true')).toEqual({
      problem: 'not an address, CIDR block or hop count: proxy.internal, true',
    });
  });
});
