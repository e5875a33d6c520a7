import { Database } from '@listing/db';
import { connectRedis, nudgeChannel, OutboxWriter, type RedisClient } from '@listing/outbox';
import { seedWorkspace, useTestDatabase, waitFor } from '@listing/testing';
import { startApi, type InProcessApi } from '../support/in-process-api';

const t = useTestDatabase();

/**
 * The API role's writer honours OUTBOX_NUDGE_GAP_MS: its nudges are at least the gap apart, and
 * the commits inside a gap share one message (the unit test covers the nudger alone; this covers
 * the configuration reaching the writer the API's services use).
 */
describe("the API role's nudge gap", () => {
  const GAP_MS = 400;
  let api: InProcessApi;
  let subscriber: RedisClient;
  const messages: { at: number; text: string }[] = [];

  beforeAll(async () => {
    api = await startApi(t.info, { OUTBOX_NUDGE_GAP_MS: String(GAP_MS) });
    subscriber = connectRedis(t.info.redis);
    subscriber.on('message', (_channel, text: string) => messages.push({ at: performance.now(), text }));
    await subscriber.subscribe(nudgeChannel(t.info.bullPrefix));
  });
  afterAll(async () => {
    await subscriber?.quit();
    await api?.close();
  });

  it('sends the first commit at once and gathers the next ones until the gap has passed', async () => {
    const { workspaceId } = await seedWorkspace(t.owner);
    const db = api.app.get(Database);
    const writer = api.app.get(OutboxWriter);
    const commit = (i: number) =>
      db.withWorkspace(workspaceId, () =>
        writer.append({ queue: 'nudge-gap', type: 'fixture.nudge-gap', payload: { i } }),
      );

    const firstCommittedAt = performance.now();
    for (let i = 0; i < 3; i++) await commit(i);
    await waitFor('two nudges', async () => messages.length >= 2, 5_000, 20);
    // Nothing more comes: the three commits made two messages.
    await new Promise((r) => setTimeout(r, GAP_MS * 1.5));

    expect(messages.map((m) => m.text)).toEqual([workspaceId, workspaceId]);
    expect(messages[0]!.at - firstCommittedAt).toBeLessThan(GAP_MS / 2);
    // The second goes out a gap after the first, which went out after the first commit began;
    // measured at the subscriber from that start, since a first message delivered late would
    // shorten the interval between arrivals. Timers may fire a little early: allow 10 %.
    expect(messages[1]!.at - firstCommittedAt).toBeGreaterThanOrEqual(GAP_MS * 0.9);
    const { rows } = await t.owner.query(
      `select count(*)::int as n from outbox_events where queue = 'nudge-gap'`,
    );
    expect(rows[0].n).toBe(3);
  });
});
