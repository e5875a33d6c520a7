import { Injectable } from '@nestjs/common';
import { Database, sql, storeProducts, storeSyncs, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder, type PagePosition } from '../../common/page-cursor';
import { storableText } from '../../common/storable-text';
import type { PlatformProduct } from '../platform/platform.client';
import type { StoreProductView, StoreSyncView } from './store-sync-view';

type SyncRow = Pick<
  SqlRow<typeof storeSyncs>,
  | 'id'
  | 'store_id'
  | 'status'
  | 'cursor'
  | 'pages'
  | 'items_synced'
  | 'error_code'
  | 'created_at'
  | 'completed_at'
>;

const COLUMNS = sql`id, store_id, status, cursor, pages, items_synced, error_code, created_at, completed_at`;

/**
 * SQL of store_syncs and store_products. The partial unique index on active syncs arbitrates
 * "one active sync per store"; the checkpoint advances only from the cursor it expects, so two
 * deliveries of one sync cannot both count a page.
 */
@Injectable()
export class StoreSyncsRepository {
  constructor(private readonly db: Database) {}

  /** False when the store already has a pending or running sync. */
  async insert(sync: { id: string; storeId: string; createdBy: string }): Promise<boolean> {
    const r = await this.db.requireTransaction('sync insert').execute(sql`
      insert into store_syncs (workspace_id, id, store_id, created_by)
      values (app_current_workspace(), ${sync.id}, ${sync.storeId}, ${sync.createdBy})
      on conflict (workspace_id, store_id) where status in ('pending', 'running') do nothing`);
    return r.rowCount === 1;
  }

  /** The store's pending or running sync, if any (the one an insert conflicted with). */
  async findActiveId(storeId: string): Promise<string | undefined> {
    const { rows } = await this.db.executor.execute<Pick<SyncRow, 'id'>>(sql`
      select id from store_syncs
       where workspace_id = app_current_workspace() and store_id = ${storeId}
         and status in ('pending', 'running')`);
    return rows[0]?.id;
  }

  async find(id: string): Promise<(StoreSyncView & { cursor: string | null }) | undefined> {
    const { rows } = await this.db.executor.execute<SyncRow>(
      sql`select ${COLUMNS} from store_syncs where workspace_id = app_current_workspace() and id = ${id}`,
    );
    return rows[0] && { ...toView(rows[0]), cursor: rows[0].cursor };
  }

  /** As accepted: pending, nothing synced yet (immutable columns only). */
  async findAsAccepted(id: string): Promise<StoreSyncView | undefined> {
    const found = await this.find(id);
    if (!found) return undefined;
    const { cursor: _cursor, ...view } = found;
    return { ...view, status: 'pending', pages: 0, itemsSynced: 0, errorCode: null, completedAt: null };
  }

  async list(limit: number, after?: PagePosition): Promise<StoreSyncView[]> {
    const { rows } = await this.db.executor.execute<SyncRow>(sql`
      select ${COLUMNS} from store_syncs where workspace_id = app_current_workspace() ${afterCursor(after)}
       ${pageOrder()} limit ${limit}`);
    return rows.map(toView);
  }

  async markRunning(id: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update store_syncs set status = 'running', updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')`);
    return r.rowCount === 1;
  }

  /**
   * Records one fetched page: from `expected` to `next` (null = the walk is complete and the
   * sync succeeded). False when the sync is no longer running or another delivery moved it.
   */
  async checkpoint(
    id: string,
    expected: string | null,
    next: string | null,
    items: number,
  ): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update store_syncs
         set cursor = ${next}, pages = pages + 1, items_synced = items_synced + ${items}, updated_at = now(),
             status = ${next === null ? 'succeeded' : 'running'},
             completed_at = ${next === null ? sql`now()` : sql`null`}
       where workspace_id = app_current_workspace() and id = ${id} and status = 'running'
         and cursor is not distinct from ${expected}`);
    return r.rowCount === 1;
  }

  async markFailed(id: string, errorCode: string): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update store_syncs set status = 'failed', error_code = ${errorCode}, completed_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${id} and status in ('pending', 'running')`);
    return r.rowCount === 1;
  }

  /** A store's products in platform id order (the primary key's), after `after` (keyset). */
  async listProducts(storeId: string, limit: number, after?: string): Promise<StoreProductView[]> {
    const { rows } = await this.db.executor.execute<ProductRow>(sql`
      select platform_product_id, title, price, platform_status, platform_created_at, last_sync_id,
             first_seen_at, last_seen_at
        from store_products
       where workspace_id = app_current_workspace() and store_id = ${storeId}
         ${after === undefined ? sql`` : sql`and platform_product_id > ${after}`}
       order by platform_product_id limit ${limit}`);
    return rows.map((r) => ({
      platformProductId: r.platform_product_id,
      title: r.title,
      price: r.price,
      platformStatus: r.platform_status,
      platformCreatedAt: r.platform_created_at ? new Date(r.platform_created_at).toISOString() : null,
      lastSyncId: r.last_sync_id,
      firstSeenAt: new Date(r.first_seen_at).toISOString(),
      lastSeenAt: new Date(r.last_seen_at).toISOString(),
    }));
  }

  /**
   * After a complete listing: the store's products this sync did not see are gone from the
   * marketplace. Only one sync per store runs at a time, so every row it saw carries its id.
   */
  async deleteUnseen(storeId: string, syncId: string): Promise<number> {
    const r = await this.db.executor.execute(sql`
      delete from store_products
       where workspace_id = app_current_workspace() and store_id = ${storeId}
         and last_sync_id is distinct from ${syncId}`);
    return r.rowCount ?? 0;
  }

  /** Idempotent upserts keyed by (store, platform product id). */
  async upsertProducts(storeId: string, syncId: string, items: PlatformProduct[]): Promise<void> {
    if (items.length === 0) return;
    // PlatformClient has checked the page: ids of at most 200 characters, unique; createdAt a
    // UTC instant PostgreSQL reads, or absent. The free texts are repaired and cut to the columns'
    // sizes (storableText: a marketplace may send a NUL or split an emoji).
    const rows = items.map((p) => ({
      id: p.productId,
      title: storableText(p.title, 500),
      price: p.price === null ? null : storableText(String(p.price), 32),
      status: storableText(p.status, 32),
      createdAt: p.createdAt ?? null,
    }));
    await this.db.executor.execute(sql`
      insert into store_products (workspace_id, store_id, platform_product_id, title, price, platform_status,
                                  platform_created_at, last_sync_id)
      select app_current_workspace(), ${storeId}, x.id, x.title, x.price, x.status, x."createdAt", ${syncId}
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
             as x(id text, title text, price text, status text, "createdAt" timestamptz)
      on conflict (workspace_id, store_id, platform_product_id) do update
         set title = excluded.title, price = excluded.price, platform_status = excluded.platform_status,
             platform_created_at = excluded.platform_created_at, last_sync_id = excluded.last_sync_id,
             last_seen_at = now()`);
  }
}

type ProductRow = Pick<
  SqlRow<typeof storeProducts>,
  | 'platform_product_id'
  | 'title'
  | 'price'
  | 'platform_status'
  | 'platform_created_at'
  | 'last_sync_id'
  | 'first_seen_at'
  | 'last_seen_at'
>;

function toView(row: SyncRow): StoreSyncView {
  return {
    id: row.id,
    storeId: row.store_id,
    status: row.status,
    pages: row.pages,
    itemsSynced: row.items_synced,
    errorCode: row.error_code,
    createdAt: new Date(row.created_at).toISOString(),
    completedAt: row.completed_at ? new Date(row.completed_at).toISOString() : null,
  };
}
