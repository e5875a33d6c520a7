import { sortKeys } from '../../src/openapi-dump';

/** src/openapi-dump.ts's key order (the document itself: openapi-dump.e2e-spec.ts). */
describe('openapi-dump: sortKeys', () => {
  it('sorts every object’s keys, keeps arrays in order', () => {
    const sorted = sortKeys({ b: 1, a: { d: [{ z: 1, y: 2 }, 3], c: null } });
    expect(JSON.stringify(sorted)).toBe('{"a":{"c":null,"d":[{"y":2,"z":1},3]},"b":1}');
  });
});
