import { InvalidJsonError, ValidationFailedError } from '../src/common/domain-errors';
import { MAX_JSON_DEPTH, jsonDepthExceeds, parseJsonBody } from '../src/common/request-body.parsers';

const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

describe('parseJsonBody', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels of nesting and refuses one more, whatever the containers`, () => {
    expect(parseJsonBody(Buffer.from(nested(MAX_JSON_DEPTH)))).toBeDefined();
    expect(() => parseJsonBody(Buffer.from(nested(MAX_JSON_DEPTH + 1)))).toThrow(ValidationFailedError);
    expect(jsonDepthExceeds(JSON.parse(`${'['.repeat(33)}${']'.repeat(33)}`), MAX_JSON_DEPTH)).toBe(true);
    expect(jsonDepthExceeds(JSON.parse(`${'['.repeat(32)}${']'.repeat(32)}`), MAX_JSON_DEPTH)).toBe(false);
    // 100,000 levels: refused, not a stack overflow
    expect(() => parseJsonBody(Buffer.from(`${'['.repeat(100_000)}${']'.repeat(100_000)}`))).toThrow(
      ValidationFailedError,
    );
  });

  it('tells bytes that are not UTF-8 from text that is not JSON', () => {
    expect(() => parseJsonBody(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]))).toThrow(/UTF-8/);
    expect(() => parseJsonBody(Buffer.from('{"a":'))).toThrow(InvalidJsonError);
    expect(parseJsonBody(Buffer.from('{"title":"é"}'))).toEqual({ title: 'é' });
  });

  it('refuses prototype-poisoning keys, nested ones too', () => {
    for (const text of ['{"__proto__":{"x":1}}', '{"a":{"constructor":{"prototype":{"x":1}}}}']) {
      expect(() => parseJsonBody(Buffer.from(text))).toThrow(ValidationFailedError);
    }
    expect(parseJsonBody(Buffer.from('{"constructor":"fine"}'))).toEqual({ constructor: 'fine' });
  });
});
