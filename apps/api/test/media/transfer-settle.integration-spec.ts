import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { OutboxWriter, SETTLED_ELSEWHERE } from '@listing/outbox';
import { seedWorkspace, useTestDatabase } from '@listing/testing';
import { loadMediaConfig } from '../../src/config/media-config';
import { AuditRepository } from '../../src/modules/audit/audit.repository';
import { AuditService } from '../../src/modules/audit/audit.service';
import {
  MaterialTransferJob,
  transferObjectKey,
} from '../../src/modules/material-transfers/material-transfers.jobs';
import { MaterialTransfersRepository } from '../../src/modules/material-transfers/material-transfers.repository';
import { MediaIntake } from '../../src/modules/media/media-intake.service';
import { MediaRepository } from '../../src/modules/media/media.repository';
import { LocalDirectoryObjectStorage } from '../../src/modules/object-storage/local-directory-object-storage';
import { AsyncCommands } from '../../src/modules/operations/async-commands.service';
import { OperationProgress } from '../../src/modules/operations/operation-progress.service';
import { OperationsRepository } from '../../src/modules/operations/operations.repository';

const t = useTestDatabase();

/**
 * A transfer's settlement makes its media in the same transaction, and only when the success
 * transition applied: two deliveries that both got past the claim (a stalled job retried while
 * the first still ran) make one media, one operation and one media.process job.
 */
describe('material transfer settlement: the media it becomes', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'transfer-settle-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  function jobOf() {
    const db = t.agentDb;
    const operations = new OperationsRepository(db);
    const outbox = new OutboxWriter(db);
    const audit = new AuditService(db, new AuditRepository(db));
    const intake = new MediaIntake(
      new MediaRepository(db),
      new AsyncCommands(operations, outbox, audit),
      outbox,
      audit,
    );
    const transfers = new MaterialTransfersRepository(db);
    const job = new MaterialTransferJob(
      db,
      transfers,
      new OperationProgress(operations),
      intake,
      new LocalDirectoryObjectStorage(root),
      loadMediaConfig({}),
    );
    return { db, job, transfers };
  }

  async function runningTransfer(workspaceId: string, userId: string, sourceKey: string) {
    const id = randomUUID();
    const operationId = randomUUID();
    await t.owner.query(
      `insert into operations (workspace_id, id, kind, resource_type, resource_id, created_by, status)
       values ($1, $2, 'material-transfer.copy', 'material_transfer', $3, $4, 'running')`,
      [workspaceId, operationId, id, userId],
    );
    await t.owner.query(
      `insert into material_transfers (workspace_id, id, status, source_url, source_key, object_key, operation_id, created_by)
       values ($1, $2, 'running', $3, $3, $4, $5, $6)`,
      [workspaceId, id, sourceKey, transferObjectKey(workspaceId, id), operationId, userId],
    );
    return { id, operationId };
  }

  const facts = {
    contentType: 'image/png',
    size: 1234,
    checksumSha256: 'a'.repeat(64),
    width: 10,
    height: 20,
  };

  it('settles once: one media (processing, with its operation and job); the second settlement makes nothing', async () => {
    const { workspaceId, userId } = await seedWorkspace(t.owner, 'transfer-settle');
    const { db, job, transfers } = jobOf();
    const transfer = await runningTransfer(workspaceId, userId, 'https://cdn.example/a/b/photo-1.png');
    const payload = { transferId: transfer.id, operationId: transfer.operationId };
    const settle = () =>
      db.withWorkspace(workspaceId, async () => {
        const row = (await transfers.findRow(transfer.id))!;
        return job.settle({ ...row, status: 'running' }, { result: facts, fetched: true }, payload);
      });

    const first = await settle();
    expect(first).toEqual({ outcome: 'succeeded', fetched: true, mediaId: expect.any(String) });
    const mediaId = (first as { mediaId: string }).mediaId;
    expect(await settle()).toBe(SETTLED_ELSEWHERE);

    const { rows } = await t.owner.query(
      `select m.id, m.status, m.filename, m.content_type, m.declared_size::int as size, m.original_key,
              m.created_by, o.kind, o.status as op, o.resource_id, t.media_id
         from media m join operations o on o.id = m.operation_id
         join material_transfers t on t.workspace_id = m.workspace_id and t.media_id = m.id
        where m.workspace_id = $1`,
      [workspaceId],
    );
    expect(rows).toEqual([
      {
        id: mediaId,
        status: 'processing',
        filename: 'photo-1.png',
        content_type: 'image/png',
        size: 1234,
        original_key: transferObjectKey(workspaceId, transfer.id),
        created_by: userId,
        kind: 'media.process',
        op: 'pending',
        resource_id: mediaId,
        media_id: mediaId,
      },
    ]);
    const events = await t.owner.query(
      `select queue, event_type as type, payload from outbox_events where workspace_id = $1`,
      [workspaceId],
    );
    expect(events.rows).toEqual([
      { queue: 'media', type: 'media.process', payload: { mediaId, operationId: expect.any(String) } },
    ]);
    const ops = await t.owner.query(`select status from operations where id = $1`, [transfer.operationId]);
    expect(ops.rows).toEqual([{ status: 'succeeded' }]);
  });

  it('names the media after the source’s last path segment, decoded and made safe, or after the transfer', async () => {
    const { workspaceId, userId } = await seedWorkspace(t.owner, 'transfer-names');
    const { db, job, transfers } = jobOf();
    const nameOf = async (sourceKey: string) => {
      const transfer = await runningTransfer(workspaceId, userId, sourceKey);
      const outcome = await db.withWorkspace(workspaceId, async () => {
        const row = (await transfers.findRow(transfer.id))!;
        return job.settle(
          row,
          { result: facts, fetched: true },
          {
            transferId: transfer.id,
            operationId: transfer.operationId,
          },
        );
      });
      const { rows } = await t.owner.query(`select filename from media where id = $1`, [
        (outcome as { mediaId: string }).mediaId,
      ]);
      return { transferId: transfer.id, filename: rows[0].filename as string };
    };
    expect((await nameOf('https://cdn.example/i/%E5%9B%BE%2F%01one.png')).filename).toBe('图_one.png');
    expect((await nameOf('https://cdn.example/i/%E0%A4%A.png')).filename).toBe('%E0%A4%A.png');
    expect((await nameOf(`https://cdn.example/${'x'.repeat(300)}.png`)).filename).toBe('x'.repeat(255));
    const bare = await nameOf('https://cdn.example/folder/');
    expect(bare.filename).toBe(`transfer-${bare.transferId}`);
    const blank = await nameOf('https://cdn.example/%20%09');
    expect(blank.filename).toBe(`transfer-${blank.transferId}`);
  });
});
