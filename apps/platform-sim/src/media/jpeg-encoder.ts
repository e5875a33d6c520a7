/**
 * Minimal baseline JPEG encoder: one greyscale component, one flat value per 8x8 block (DC only,
 * every AC coefficient zero). Real decoders read it; dimension detection reads SOF0. Small
 * custom Huffman tables keep it short: DC categories 0-11 all get 4-bit codes, AC has only EOB.
 */
export function encodeJpeg(
  width: number,
  height: number,
  blockValue: (bx: number, by: number) => number,
): Buffer {
  const blocksX = Math.ceil(width / 8);
  const blocksY = Math.ceil(height / 8);
  const bits = new BitWriter();
  let previousDc = 0;
  for (let by = 0; by < blocksY; by += 1) {
    for (let bx = 0; bx < blocksX; bx += 1) {
      // A flat block of level-shifted value v has DC = 8 * v (with a quantiser of 1).
      const value = clamp(Math.round(blockValue(bx, by)), 0, 255);
      const dc = 8 * (value - 128);
      const diff = dc - previousDc;
      previousDc = dc;
      const category = diff === 0 ? 0 : 32 - Math.clz32(Math.abs(diff));
      bits.write(category, 4); // DC Huffman code: category n -> n as 4 bits (see DHT below)
      if (category > 0) bits.write(diff > 0 ? diff : diff + (1 << category) - 1, category);
      bits.write(0, 1); // AC Huffman code "0" = EOB
    }
  }
  const scan = bits.finish();

  const dcCounts = new Array<number>(16).fill(0);
  dcCounts[3] = 12; // twelve codes of length 4
  const dcSymbols = Array.from({ length: 12 }, (_, i) => i);
  const acCounts = new Array<number>(16).fill(0);
  acCounts[0] = 1; // one code of length 1
  const acSymbols = [0x00]; // EOB

  return Buffer.concat([
    Buffer.from([0xff, 0xd8]), // SOI
    segment(0xe0, Buffer.from([0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0])), // JFIF
    segment(0xdb, Buffer.from([0x00, ...new Array<number>(64).fill(1)])), // DQT: table 0, all 1
    segment(0xc0, Buffer.from([8, height >> 8, height & 0xff, width >> 8, width & 0xff, 1, 1, 0x11, 0])), // SOF0
    segment(0xc4, Buffer.from([0x00, ...dcCounts, ...dcSymbols])), // DHT: DC table 0
    segment(0xc4, Buffer.from([0x10, ...acCounts, ...acSymbols])), // DHT: AC table 0
    segment(0xda, Buffer.from([1, 1, 0x00, 0, 63, 0])), // SOS
    scan,
    Buffer.from([0xff, 0xd9]), // EOI
  ]);
}

function segment(marker: number, payload: Buffer): Buffer {
  const header = Buffer.from([0xff, marker, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]);
  return Buffer.concat([header, payload]);
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

/** MSB-first bit packer with JPEG byte stuffing (0xFF is followed by 0x00 in entropy-coded data). */
class BitWriter {
  private readonly bytes: number[] = [];
  private current = 0;
  private count = 0;

  write(value: number, length: number): void {
    for (let i = length - 1; i >= 0; i -= 1) {
      this.current = (this.current << 1) | ((value >> i) & 1);
      this.count += 1;
      if (this.count === 8) this.flushByte();
    }
  }

  finish(): Buffer {
    // Pad the last byte with 1-bits, as the standard requires.
    while (this.count !== 0) this.write(1, 1);
    return Buffer.from(this.bytes);
  }

  private flushByte(): void {
    this.bytes.push(this.current);
    if (this.current === 0xff) this.bytes.push(0x00);
    this.current = 0;
    this.count = 0;
  }
}
