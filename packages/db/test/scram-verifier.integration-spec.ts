import { createHash, createHmac, randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { scramVerifier } from '@listing/db';
import { createTestDatabase, type TestDatabase } from '@listing/testing';

// pg's own SCRAM client (no types): the other half of the exchange the verifier must satisfy.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sasl = require('pg/lib/crypto/sasl') as {
  startSession(mechanisms: string[]): { clientNonce: string; response: string; message: string };
  continueSession(session: object, password: string, serverData: string): Promise<void>;
  finalizeSession(session: object, serverData: string): void;
};

/** Runs pg's client against a server that knows only the verifier; resolves when both sides agree. */
async function authenticate(verifier: string, password: string): Promise<void> {
  const m = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier)!;
  const [iterations, salt, storedKey, serverKey] = [
    m[1]!,
    m[2]!,
    Buffer.from(m[3]!, 'base64'),
    Buffer.from(m[4]!, 'base64'),
  ];
  const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();
  const session = sasl.startSession(['SCRAM-SHA-256']);
  const nonce = session.clientNonce + randomBytes(18).toString('base64');
  const serverFirst = `r=${nonce},s=${salt},i=${iterations}`;
  await sasl.continueSession(session, password, serverFirst);
  const [withoutProof, proof] = (session as unknown as { response: string }).response.split(',p=');
  const authMessage = `n=*,r=${session.clientNonce},${serverFirst},${withoutProof}`;
  // Server side (RFC 5802 §3): ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage), and
  // H(ClientKey) must equal StoredKey.
  const signature = hmac(storedKey, authMessage);
  const clientKey = Buffer.from(proof!, 'base64').map((b, i) => b ^ signature[i]!);
  if (!createHash('sha256').update(clientKey).digest().equals(storedKey)) throw new Error('wrong password');
  sasl.finalizeSession(session, `v=${hmac(serverKey, authMessage).toString('base64')}`);
}

describe('SCRAM-SHA-256 verifiers for role passwords (the password never reaches the server)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ empty: true });
  });
  afterAll(async () => {
    await db.drop();
  });

  it("satisfies pg's SCRAM client for the right password only", async () => {
    const verifier = scramVerifier('s3cret-pw');
    await expect(authenticate(verifier, 's3cret-pw')).resolves.toBeUndefined();
    await expect(authenticate(verifier, 'other-pw')).rejects.toThrow();
  });

  it('PostgreSQL stores it as given (it would hash a string it did not recognise as a verifier)', async () => {
    const admin = new Client({ connectionString: db.adminUrl });
    await admin.connect();
    const role = `scram_probe_${randomBytes(4).toString('hex')}`;
    try {
      const verifier = scramVerifier('s3cret-pw');
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD ${admin.escapeLiteral(verifier)}`);
      const { rows } = await admin.query('select rolpassword from pg_authid where rolname = $1', [role]);
      expect(rows[0].rolpassword).toBe(verifier);
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });
});
