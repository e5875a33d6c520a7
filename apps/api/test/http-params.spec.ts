import { IfMatchRequiredError } from '../src/common/domain-errors';
import {
  contentEtagOf,
  IfMatchInvalidError,
  ifNoneMatchHits,
  parseIfMatch,
  revisionMatches,
} from '../src/common/http-params';

describe('If-Match (RFC 9110 §13.1.1)', () => {
  const matches = (header: string, revision: number) =>
    revisionMatches(parseIfMatch(header, true)!, revision);

  it('a strong tag matches its revision only', () => {
    expect(matches('"3"', 3)).toBe(true);
    expect(matches(' "3" ', 3)).toBe(true);
    expect(matches('"3"', 4)).toBe(false);
  });

  it('a list matches when any tag does; * matches any current revision', () => {
    expect(matches('"2", "3"', 3)).toBe(true);
    expect(matches('"3","2"', 3)).toBe(true);
    expect(matches('"1", "2"', 3)).toBe(false);
    expect(matches('*', 7)).toBe(true);
  });

  it('weak tags and tags that are not exactly a revision ETag match nothing (412, not 400)', () => {
    expect(matches('W/"3"', 3)).toBe(false);
    expect(matches('"03"', 3)).toBe(false);
    expect(matches('"abc"', 3)).toBe(false);
    expect(matches('W/"3", "3"', 3)).toBe(true);
  });

  it('malformed syntax is a 400; absence is a 428 when required', () => {
    for (const header of ['3', '"3', '3"', '"3" "4"', ',', 'W/3', '"a"b"']) {
      expect(() => parseIfMatch(header, true)).toThrow(IfMatchInvalidError);
    }
    expect(() => parseIfMatch(undefined, true)).toThrow(IfMatchRequiredError);
    expect(() => parseIfMatch('  ', true)).toThrow(IfMatchRequiredError);
    expect(parseIfMatch(undefined, false)).toBeNull();
  });

  it('a plain number (a worker applying a result) is one revision', () => {
    expect(revisionMatches(3, 3)).toBe(true);
    expect(revisionMatches(3, 4)).toBe(false);
  });
});

describe('If-None-Match (RFC 9110 §13.1.2) on downloads', () => {
  const etag = contentEtagOf('ab12');

  it('names the bytes by their tag, compared weakly, alone or in a list, or by *', () => {
    expect(etag).toBe('"ab12"');
    for (const header of ['"ab12"', ' "ab12" ', 'W/"ab12"', '"x", "ab12"', '"x",W/"ab12"', '*']) {
      expect({ header, hit: ifNoneMatchHits(header, etag) }).toEqual({ header, hit: true });
    }
  });

  it('anything else, malformed or absent, matches nothing: the bytes are sent', () => {
    for (const header of [undefined, '', '"ab1"', '"AB12"', 'ab12', '"ab12', '"x" "ab12"', 'W/ab12']) {
      expect({ header, hit: ifNoneMatchHits(header, etag) }).toEqual({ header, hit: false });
    }
  });
});
