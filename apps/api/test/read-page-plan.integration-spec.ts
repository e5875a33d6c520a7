import { randomUUID } from 'node:crypto';
import { sql, type Database, type SQL } from '@listing/db';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { AuditRepository } from '../src/modules/audit/audit.repository';
import { RecordsRepository } from '../src/modules/records/records.repository';
import { InvitationsRepository } from '../src/modules/workspaces/invitations.repository';
import { MembersRepository } from '../src/modules/workspaces/members.repository';

const t = useTestDatabase();

/**
 * A Database that runs nothing: it keeps the statement a repository method would run, so the
 * test can EXPLAIN exactly that statement on the real database.
 */
function capturing(): { db: Database; last: () => SQL } {
  let captured: SQL | undefined;
  const executor = {
    execute: async (query: SQL) => {
      captured = query;
      return { rows: [], rowCount: 0 };
    },
  };
  return {
    db: { executor } as unknown as Database,
    last: () => {
      if (!captured) throw new Error('the repository ran no statement');
      return captured;
    },
  };
}

/**
 * The first batch's reads (members, pending invitations, the audit log whole and per resource, a
 * draft's revisions) page as index ranges: on the first page and after a cursor, the plan of the
 * repository's own statement reads its index in order, with no sort of the workspace's rows.
 */
describe('the reads of the first batch page as index ranges', () => {
  let workspaceId: string;
  let userId: string;
  const draftId = randomUUID();
  const resourceId = randomUUID();

  beforeAll(async () => {
    ({ workspaceId, userId } = await seedWorkspace(t.owner, 'read pages'));
    const rows = 4000;
    await t.owner.query(
      `with u as (
         insert into users (id, email, password_hash, created_at)
         select gen_random_uuid(), 'm' || g || '-' || $1::text || '@example.test', 'x', now() from generate_series(1, $2) g
         returning id, email)
       insert into workspace_members (workspace_id, user_id, role, created_at)
       select $1::uuid, id, 'member', now() - (random() * 100000) * interval '1 millisecond' from u`,
      [workspaceId, rows],
    );
    await t.owner.query(
      `insert into workspace_invitations (id, workspace_id, email, role, invited_by, created_at, expires_at, accepted_at)
       select gen_random_uuid(), $1, 'i' || g || '@example.test', 'member', $2, now() - g * interval '1 millisecond',
              now() + interval '1 day', case when g % 3 = 0 then now() end
         from generate_series(1, $3) g`,
      [workspaceId, userId, rows],
    );
    await t.owner.query(
      `insert into audit_events (workspace_id, id, actor_user_id, action, entity_type, entity_id, created_at)
       select $1, gen_random_uuid(), $2, 'RECORD_UPDATED', 'product_draft',
              case when g % 50 = 0 then $3::uuid else gen_random_uuid() end, now() - g * interval '1 millisecond'
         from generate_series(1, $4) g`,
      [workspaceId, userId, resourceId, rows * 2],
    );
    await t.owner.query(
      `insert into records (workspace_id, id, module_code, revision, payload, created_by)
       values ($1, $2, 'product_draft', $4, '{}', $3)`,
      [workspaceId, draftId, userId, rows],
    );
    await t.owner.query(
      `insert into record_revisions (workspace_id, record_id, revision, snapshot, created_by)
       select $1, $2, g, '{}', $3 from generate_series(1, $4) g`,
      [workspaceId, draftId, userId, rows],
    );
    await t.owner.query(
      'analyze users, workspace_members, workspace_invitations, audit_events, records, record_revisions',
    );
  });

  async function planOf(statement: SQL): Promise<string> {
    return t.db.withWorkspace(workspaceId, async () =>
      (await t.db.executor.execute<{ 'QUERY PLAN': string }>(sql`explain ${statement}`)).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n'),
    );
  }

  const position = { createdAt: new Date().toISOString(), id: randomUUID() };
  const { db, last } = capturing();
  const cases: Array<[string, string, (after: boolean) => Promise<unknown>]> = [
    [
      'members',
      'workspace_members_page_idx',
      (after) => new MembersRepository(db).list(21, after ? position : undefined),
    ],
    [
      'pending invitations',
      'workspace_invitations_open_page_idx',
      (after) => new InvitationsRepository(db).listPending(21, after ? position : undefined),
    ],
    [
      'the audit log',
      'audit_events_page_idx',
      (after) => new AuditRepository(db).list(21, after ? position : undefined),
    ],
    [
      "one resource's audit log",
      'audit_events_resource_page_idx',
      (after) =>
        new AuditRepository(db).list(21, after ? position : undefined, {
          type: 'product_draft',
          id: resourceId,
        }),
    ],
    [
      "a draft's revisions",
      'record_revisions_pkey',
      (after) =>
        new RecordsRepository(db).listRevisions('product_draft', draftId, 21, after ? 2000 : undefined),
    ],
  ];

  it.each(cases)('%s: a range of %s, without a sort', async (_, index, run) => {
    for (const after of [false, true]) {
      await run(after);
      const plan = await planOf(last());
      expect({ after, plan }).toEqual({ after, plan: expect.stringContaining(index) });
      expect({ after, plan }).toEqual({ after, plan: expect.not.stringMatching(/\bSort\b/) });
    }
  });
});
