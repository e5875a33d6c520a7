import { nudgeChannel, OutboxNudger, parseNudge } from '../src';

describe('OutboxNudger', () => {
  const tick = () => new Promise((r) => setImmediate(r));

  it('coalesces nudges of one event-loop turn into one PUBLISH on the prefixed channel', async () => {
    const sent: string[] = [];
    const nudger = new OutboxNudger({ publish: async (c) => sent.push(c) }, nudgeChannel('bull'));
    for (let i = 0; i < 100; i++) nudger.nudge();
    await tick();
    expect(sent).toEqual(['bull:outbox:nudge']);
  });

  it('names the workspaces with new events (deduplicated); a bare nudge says "1"', async () => {
    const sent: string[] = [];
    const nudger = new OutboxNudger({ publish: async (_c, m) => sent.push(m) }, 'c');
    const a = '11111111-1111-4111-8111-111111111111';
    const b = '22222222-2222-4222-8222-222222222222';
    nudger.nudge(a);
    nudger.nudge(b);
    nudger.nudge(a);
    await tick();
    nudger.nudge();
    await tick();
    expect(sent).toEqual([`${a},${b}`, '1']);
    expect(parseNudge(sent[0]!)).toEqual([a, b]);
    expect(parseNudge('1')).toEqual([]);
    expect(parseNudge(`${a},not-a-uuid,'; drop table x`)).toEqual([a]);
  });

  it('while a publish is in flight, later nudges become exactly one more', async () => {
    let release!: () => void;
    const sent: number[] = [];
    const nudger = new OutboxNudger(
      {
        publish: () =>
          new Promise((r) => {
            sent.push(1);
            release = () => r(1);
          }),
      },
      'c',
    );
    nudger.nudge();
    await tick();
    nudger.nudge();
    await tick();
    nudger.nudge();
    await tick();
    expect(sent.length).toBe(1);
    release();
    await tick();
    await tick();
    expect(sent.length).toBe(2);
  });

  it('with a gap, a nudge after a quiet spell goes at once and the nudges within the gap share one message', async () => {
    const sent: Array<{ message: string; at: number }> = [];
    const gapMs = 60;
    const nudger = new OutboxNudger(
      { publish: async (_c, message) => sent.push({ message, at: performance.now() }) },
      'c',
      gapMs,
    );
    const [a, b, c] = ['1', '2', '3'].map(
      (d) => `${d.repeat(8)}-${d.repeat(4)}-4${d.repeat(3)}-8${d.repeat(3)}-${d.repeat(12)}`,
    );
    const start = performance.now();
    nudger.nudge(a);
    await tick();
    nudger.nudge(b);
    await tick();
    nudger.nudge(c);
    await tick();
    expect(sent.map((s) => s.message)).toEqual([a]); // b and c wait for the gap
    expect(sent[0]!.at - start).toBeLessThan(gapMs / 2);
    await new Promise((r) => setTimeout(r, gapMs + 20));
    expect(sent.map((s) => s.message)).toEqual([a, `${b},${c}`]);
    expect(sent[1]!.at - sent[0]!.at).toBeGreaterThanOrEqual(gapMs - 1);
    await new Promise((r) => setTimeout(r, gapMs + 20)); // quiet for longer than the gap
    const quietAt = performance.now();
    nudger.nudge(a);
    await tick();
    expect(sent).toHaveLength(3);
    expect(sent[2]!.at - quietAt).toBeLessThan(gapMs / 2);
  });

  it('swallows publish errors (a lost nudge only costs the polling interval)', async () => {
    const nudger = new OutboxNudger({ publish: async () => Promise.reject(new Error('down')) }, 'c');
    nudger.nudge();
    await tick();
    await tick();
    expect(nudger.sent).toBe(1);
  });
});
