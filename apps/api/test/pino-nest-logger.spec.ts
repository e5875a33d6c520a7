import { Writable } from 'node:stream';
import pino from 'pino';
import { PinoNestLogger } from '../src/ops/logger.factory';

/** What Nest's Logger hands the process logger becomes one JSON line, with fields only for ours. */
describe('PinoNestLogger', () => {
  const capture = () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    return { logger: new PinoNestLogger(pino({ base: null }, sink)), lines };
  };

  it('a structured call ({ msg, ...fields }) keeps its fields', () => {
    const { logger, lines } = capture();
    logger.log({ msg: 'media processed', media: 'm-1', thumbnailWritten: true }, 'media');
    expect(lines[0]).toMatchObject({
      msg: 'media processed',
      media: 'm-1',
      thumbnailWritten: true,
      context: 'media',
    });
  });

  it('an error or a foreign object is text: none of its fields reach the line', () => {
    const { logger, lines } = capture();
    logger.error(Object.assign(new Error('boom'), { password: 'hunter2' }), undefined, 'x');
    logger.warn({ level: 99, token: 'secret-token' }, 'y');
    expect(lines[0]).toMatchObject({ msg: 'Error: boom', context: 'x' });
    expect(lines[1]).toMatchObject({ msg: '[object Object]', context: 'y' });
    expect(JSON.stringify(lines)).not.toMatch(/hunter2|secret-token/);
    expect(lines[1]!.level).toBe(40); // pino's own, not the object's
  });
});
