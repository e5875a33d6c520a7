import { z } from 'zod';
import { ValidationFailedError } from '../src/common/domain-errors';
import { isStorable, storableJson, storableText } from '../src/common/storable-text';
import { ZodValidationPipe } from '../src/common/zod-validation.pipe';

describe('ZodValidationPipe', () => {
  const pipe = new ZodValidationPipe(
    z.strictObject({
      title: z.string(),
      tags: z.array(z.string()).optional(),
      attrs: z.record(z.string(), z.string()).optional(),
    }),
  );
  const issues = (value: unknown) => {
    try {
      pipe.transform(value);
      return [];
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationFailedError);
      return (error as ValidationFailedError).issues;
    }
  };

  it('answers in proportion: at most 20 issues, each cut at 200 characters', () => {
    const keys = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`unknown${i}`, 1]));
    const found = issues({ title: 'ok', ...keys });
    expect(JSON.stringify(found).length).toBeLessThan(5000);
    const many = issues({ title: 1, tags: Array.from({ length: 100 }, () => 7) });
    expect(many).toHaveLength(21);
    expect(many[20]).toEqual({ path: '…', message: '81 more issues not listed' });
  });

  it('names the root after where the value came from', () => {
    const query = new ZodValidationPipe(z.strictObject({ limit: z.number().optional() }));
    expect(() => query.transform('x', { type: 'query' })).toThrow(ValidationFailedError);
    try {
      query.transform('x', { type: 'query' });
    } catch (error) {
      expect((error as ValidationFailedError).issues[0]!.path).toBe('(query)');
    }
  });

  it('refuses text PostgreSQL cannot store, naming where it is', () => {
    expect(issues({ title: 'a\u0000b' })).toEqual([{ path: 'title', message: expect.stringMatching(/NUL/) }]);
    expect(issues({ title: 'ok', tags: ['fine', 'x\ud83d'] })).toEqual([
      { path: 'tags.1', message: expect.any(String) },
    ]);
    expect(issues({ title: 'ok', attrs: { ['\udc00k']: 'v' } })).toEqual([
      { path: 'attrs.(key)', message: expect.any(String) },
    ]);
  });

  it('lets every well-formed text through, emoji and other astral characters included', () => {
    expect(issues({ title: 'Grüße 😀 𝄞 ok', tags: ['\ud83d\ude00'] })).toEqual([]);
    expect(isStorable('plain')).toBe(true);
    expect(isStorable('\ud83d')).toBe(false);
    expect(isStorable('\ude00x')).toBe(false);
  });

  it('storableText repairs provider text and cuts it without splitting a surrogate pair', () => {
    expect(storableText('a\u0000b\ud800c', 10)).toBe('ab\uFFFDc');
    const title = 'x'.repeat(199) + '😀';
    expect(title.length).toBe(201);
    const cut = storableText(title, 200);
    expect(cut).toBe('x'.repeat(199));
    expect(isStorable(cut)).toBe(true);
    expect(storableText('short', 200)).toBe('short');
    expect(storableJson({ text: 'a\u0000', path: ['x\ud800', 1], ['k\u0000']: null }, 100)).toEqual({
      text: 'a',
      path: ['x\uFFFD', 1],
      k: null,
    });
  });
});
