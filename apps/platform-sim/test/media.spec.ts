import { crc32, inflateSync } from 'node:zlib';
import { useSim } from './sim-http.helpers';

interface PngChunk {
  type: string;
  data: Buffer;
  crcOk: boolean;
}

function readPngChunks(bytes: Buffer): PngChunk[] {
  const chunks: PngChunk[] = [];
  let offset = 8;
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('ascii', offset + 4, offset + 8);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    const crc = bytes.readUInt32BE(offset + 8 + length);
    chunks.push({ type, data, crcOk: crc32(bytes.subarray(offset + 4, offset + 8 + length)) >>> 0 === crc });
    offset += 12 + length;
  }
  return chunks;
}

/** Width and height from the first SOFn marker. */
function jpegDimensions(bytes: Buffer): { width: number; height: number } {
  let offset = 2;
  while (offset < bytes.length) {
    expect(bytes[offset]).toBe(0xff);
    const marker = bytes[offset + 1];
    const length = bytes.readUInt16BE(offset + 2);
    if (marker >= 0xc0 && marker <= 0xc3) {
      return { height: bytes.readUInt16BE(offset + 5), width: bytes.readUInt16BE(offset + 7) };
    }
    offset += 2 + length;
  }
  throw new Error('no SOF marker');
}

describe('platform-sim media', () => {
  const t = useSim();
  const get = async (path: string) => {
    const response = await fetch(`${t.sim.url}${path}`, { redirect: 'manual' });
    return { response, bytes: Buffer.from(await response.arrayBuffer()) };
  };

  it('serves a real PNG whose IHDR carries the size from the name', async () => {
    const { response, bytes } = await get('/platform/v1/media/shoe-640x480.png');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const chunks = readPngChunks(bytes);
    expect(chunks.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect(chunks.every((c) => c.crcOk)).toBe(true);
    const ihdr = chunks[0].data;
    expect({
      width: ihdr.readUInt32BE(0),
      height: ihdr.readUInt32BE(4),
      depth: ihdr[8],
      colour: ihdr[9],
    }).toEqual({
      width: 640,
      height: 480,
      depth: 8,
      colour: 2,
    });
    // One filter byte plus three bytes per pixel on every row.
    expect(inflateSync(chunks[1].data).length).toBe((640 * 3 + 1) * 480);
  });

  it('serves the same bytes for the same name, and honours w/h query overrides', async () => {
    const a = await get('/platform/v1/media/same.png');
    const b = await get('/platform/v1/media/same.png');
    expect(a.bytes.equals(b.bytes)).toBe(true);
    expect(a.bytes.readUInt32BE(16)).toBe(64); // default size
    const sized = await get('/platform/v1/media/same.png?w=33&h=17');
    expect([sized.bytes.readUInt32BE(16), sized.bytes.readUInt32BE(20)]).toEqual([33, 17]);
  });

  it('serves a real baseline JPEG with its size in SOF0', async () => {
    const { response, bytes } = await get('/platform/v1/media/photo-301x199.jpg');
    expect(response.headers.get('content-type')).toBe('image/jpeg');
    expect(bytes.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    expect(bytes.subarray(-2)).toEqual(Buffer.from([0xff, 0xd9]));
    expect(jpegDimensions(bytes)).toEqual({ width: 301, height: 199 });
  });

  it('makes incompressible images with noise=1, for size limits', async () => {
    const { bytes } = await get('/platform/v1/media/big-400x400.png?noise=1');
    expect(bytes.length).toBeGreaterThan(400 * 400 * 3);
  });

  it('can lie about the content type, for magic-byte checks', async () => {
    const { response, bytes } = await get('/platform/v1/media/liar.png?as=text/html');
    expect(response.headers.get('content-type')).toBe('text/html');
    expect(bytes.subarray(1, 4).toString('ascii')).toBe('PNG');
  });

  it('answers 404 for non-image names and 400 for oversize dimensions', async () => {
    expect((await get('/platform/v1/media/file.gif')).response.status).toBe(404);
    expect((await get('/platform/v1/media/huge-5000x10.png')).response.status).toBe(400);
    expect((await get('/platform/v1/media/zero.png?w=0')).response.status).toBe(400);
  });

  it('redirects anywhere with the requested status, for redirect-safety tests', async () => {
    const target = 'http://169.254.169.254/latest/meta-data';
    const { response } = await get(`/platform/v1/redirect?to=${encodeURIComponent(target)}`);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(target);
    const permanent = await get(
      `/platform/v1/redirect?status=308&to=${encodeURIComponent('/platform/v1/media/a.png')}`,
    );
    expect(permanent.response.status).toBe(308);
    const followed = await fetch(
      `${t.sim.url}/platform/v1/redirect?to=${encodeURIComponent(`${t.sim.url}/platform/v1/media/a.png`)}`,
    );
    expect(followed.headers.get('content-type')).toBe('image/png');
    expect((await get('/platform/v1/redirect')).response.status).toBe(400);
    expect((await get('/platform/v1/redirect?to=%2Fa%0D%0ASet-Cookie:%20x=1')).response.status).toBe(400);
    expect((await t.admin.counters()).redirects).toBe(5);
  });
});
