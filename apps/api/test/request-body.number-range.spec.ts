import { FingerprintKeyring } from '@listing/idempotency';
import { ValidationFailedError } from '../src/common/domain-errors';
import { outOfRangeNumbers, parseJsonBody } from '../src/common/request-body.parsers';

const refusal = (text: string): ValidationFailedError => {
  try {
    parseJsonBody(Buffer.from(text));
  } catch (error) {
    if (error instanceof ValidationFailedError) return error;
    throw error;
  }
  throw new Error(`${text} was accepted`);
};

describe('parseJsonBody and numbers beyond a double', () => {
  it('refuses 1e400 and -1e400 anywhere with a 422 VALIDATION_FAILED naming each path', () => {
    const error = refusal(
      '{"title":"x","price":{"amount":1e400},"tags":[1,-1e400],"n":1' + '0'.repeat(400) + '}',
    );
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.issues.map((i) => i.path)).toEqual(['price.amount', 'tags.1', 'n']);
    expect(error.issues[0]!.message).toMatch(/out of range/);
    expect(refusal('1e400').issues).toEqual([
      { path: '(body)', message: expect.stringMatching(/out of range/) },
    ]);
  });

  it('so no body it returns can make the idempotency fingerprint throw', () => {
    const ring = new FingerprintKeyring('k1', { k1: 'parser-secret-0123456789' });
    for (const text of ['{"a":1e-400}', '{"a":-0}', '{"a":1.7976931348623157e308}', '[0.1,2e-5,-3]']) {
      const body = parseJsonBody(Buffer.from(text));
      expect(() => ring.fingerprint('POST /x', body).current()).not.toThrow();
    }
  });

  it('names at most 20 paths, then counts the rest', () => {
    const many = outOfRangeNumbers(JSON.parse(`[${Array(25).fill('1e400').join(',')}]`));
    expect(many).toHaveLength(21);
    expect(many[19]!.path).toBe('19');
    expect(many[20]).toEqual({ path: '…', message: '5 more numbers out of range not listed' });
    expect(outOfRangeNumbers({ a: [1, { b: 'x' }], c: null, d: Buffer.from('x') })).toEqual([]);
  });
});
