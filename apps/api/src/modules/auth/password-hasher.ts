import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) =>
    scryptCb(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))),
  );

/**
 * scrypt, Node's built-in memory-hard KDF (no native addon to build). Stored as
 * `scrypt$<logN>$<r>$<p>$<salt b64>$<hash b64>` so the cost can rise without invalidating hashes.
 */
export class PasswordHasher {
  constructor(private readonly logN: number) {}

  async hash(password: string): Promise<string> {
    const salt = randomBytes(16);
    const r = 8;
    const p = 1;
    const key = await scrypt(password, salt, 32, {
      N: 2 ** this.logN,
      r,
      p,
      maxmem: 256 * 2 ** this.logN * r,
    });
    return ['scrypt', this.logN, r, p, salt.toString('base64'), key.toString('base64')].join('$');
  }

  async verify(password: string, stored: string): Promise<boolean> {
    const [scheme, logN, r, p, salt, hash] = stored.split('$');
    if (scheme !== 'scrypt' || !salt || !hash) return false;
    const expected = Buffer.from(hash, 'base64');
    const N = 2 ** Number(logN);
    const key = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, {
      N,
      r: Number(r),
      p: Number(p),
      maxmem: 256 * N * Number(r),
    });
    return timingSafeEqual(key, expected);
  }

  /** Burns the same time as a verification, so unknown emails cannot be told apart by timing. */
  async dummyVerify(password: string): Promise<void> {
    await this.hash(password);
  }
}
