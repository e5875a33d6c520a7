import { randomUUID } from 'node:crypto';
import { sql } from '@listing/db';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { afterCursor, pageOrder } from '../src/common/page-cursor';

const t = useTestDatabase();

/**
 * Every newest-first list pages with afterCursor + pageOrder: with sql/019's indexes a page is an
 * index range (no sort of the whole workspace), on the first page and after a cursor alike.
 */
describe('list pages are index ranges', () => {
  it('the media list (one of seven on the same key) reads its page from media_page_idx without a sort', async () => {
    const { workspaceId, userId } = await seedWorkspace(t.owner, 'pages');
    await t.owner.query(
      `insert into media (workspace_id, id, filename, content_type, declared_size, original_key, created_by, created_at)
       select $1, gen_random_uuid(), 'a.png', 'image/png', 10, 'k/' || g, $2, now() - g * interval '1 millisecond'
         from generate_series(1, 5000) g`,
      [workspaceId, userId],
    );
    await t.owner.query('analyze media');
    const plan = async (after?: { createdAt: string; id: string }) =>
      t.db.withWorkspace(workspaceId, async () =>
        (
          await t.db.executor.execute<{ 'QUERY PLAN': string }>(sql`
            explain select id from media where workspace_id = app_current_workspace() ${afterCursor(after)}
            ${pageOrder()} limit 21`)
        ).rows
          .map((r) => r['QUERY PLAN'])
          .join('\n'),
      );
    for (const text of [
      await plan(),
      await plan({ createdAt: new Date().toISOString(), id: randomUUID() }),
    ]) {
      expect(text).toContain('media_page_idx');
      expect(text).not.toMatch(/\bSort\b/);
    }
  });
});
