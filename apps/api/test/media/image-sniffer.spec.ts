import { mediaTypeOf, sniffImageType } from '../../src/common/image-sniffer';

const bytes = (...parts: Array<number[] | string>) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

describe('sniffImageType (magic bytes)', () => {
  it('recognises PNG, JPEG, GIF (87a and 89a) and WebP by their signatures', () => {
    expect(sniffImageType(bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]))).toBe(
      'image/png',
    );
    expect(sniffImageType(bytes([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]))).toBe('image/jpeg');
    expect(sniffImageType(bytes('GIF87a', [1, 0, 1, 0]))).toBe('image/gif');
    expect(sniffImageType(bytes('GIF89a', [1, 0, 1, 0]))).toBe('image/gif');
    expect(sniffImageType(bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8 '))).toBe('image/webp');
  });

  it('refuses everything else, whatever its name or declared type', () => {
    expect(sniffImageType(Buffer.from('<html><body>not an image</body></html>'))).toBeNull();
    expect(sniffImageType(bytes('RIFF', [0x24, 0, 0, 0], 'WAVEfmt '))).toBeNull(); // RIFF but audio
    expect(sniffImageType(bytes([0x89, 0x50, 0x4e, 0x47]))).toBeNull(); // truncated PNG signature
    expect(sniffImageType(bytes([0xff, 0xd8]))).toBeNull();
    expect(sniffImageType(bytes('%PDF-1.7'))).toBeNull();
    expect(sniffImageType(Buffer.alloc(0))).toBeNull();
  });

  it('normalises declared content types', () => {
    expect(mediaTypeOf('IMAGE/PNG; charset=binary')).toBe('image/png');
    expect(mediaTypeOf('image/jpg')).toBe('image/jpeg');
    expect(mediaTypeOf('')).toBeNull();
    expect(mediaTypeOf(undefined)).toBeNull();
  });
});
