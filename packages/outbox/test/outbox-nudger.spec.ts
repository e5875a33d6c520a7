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

  it('swallows publish errors (a lost nudge only costs the polling interval)', async () => {
    const nudger = new OutboxNudger({ publish: async () => Promise.reject(new Error('down')) }, 'c');
    nudger.nudge();
    await tick();
    await tick();
    expect(nudger.sent).toBe(1);
  });
});
