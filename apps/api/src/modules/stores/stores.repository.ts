import { Injectable } from '@nestjs/common';
import { Database } from '@listing/db';
import { sql, storeCredentials, stores, type SqlRow } from '@listing/db';
import { afterCursor, pageOrder, type PagePosition } from '../../common/page-cursor';
import type { EncryptedCredentials } from './credential-cipher';
import type { StoreStatus, StoreView } from './store-view';

type StoreRow = Pick<
  SqlRow<typeof stores>,
  'id' | 'platform' | 'store_external_id' | 'status' | 'credential_version' | 'shop_name' | 'created_at'
> & { credentials_updated_at: SqlRow<typeof storeCredentials>['created_at'] };

/** What the verification worker needs about a store (no credentials). */
export interface StoreState {
  id: string;
  storeExternalId: string;
  status: StoreStatus;
  credentialVersion: number;
}

// The view joins the credential row of the current version for its (immutable) creation time;
// never its key material.
const VIEW = sql`
  select s.id, s.platform, s.store_external_id, s.status, s.credential_version, s.shop_name, s.created_at,
         c.created_at as credentials_updated_at
    from stores s
    join store_credentials c on c.workspace_id = s.workspace_id and c.store_id = s.id and c.version = s.credential_version`;

/**
 * SQL of stores and store_credentials. Status changes are conditional on the credential version
 * and the current status, so a verification of replaced credentials changes nothing.
 */
@Injectable()
export class StoresRepository {
  constructor(private readonly db: Database) {}

  /** Inserts a new store; false when (platform, external id) is already connected in this workspace. */
  async insert(store: {
    id: string;
    platform: string;
    storeExternalId: string;
    createdBy: string;
  }): Promise<boolean> {
    const r = await this.db.requireTransaction('store insert').execute(sql`
      insert into stores (workspace_id, id, platform, store_external_id, created_by)
      values (app_current_workspace(), ${store.id}, ${store.platform}, ${store.storeExternalId}, ${store.createdBy})
      on conflict (workspace_id, platform, store_external_id) do nothing`);
    return r.rowCount === 1;
  }

  /** The id of the workspace's store for this marketplace store, if it is connected. */
  async findIdByExternal(platform: string, storeExternalId: string): Promise<string | undefined> {
    const { rows } = await this.db.executor.execute<Pick<SqlRow<typeof stores>, 'id'>>(sql`
      select id from stores
       where workspace_id = app_current_workspace() and platform = ${platform} and store_external_id = ${storeExternalId}`);
    return rows[0]?.id;
  }

  async insertCredentials(storeId: string, version: number, enc: EncryptedCredentials, createdBy: string) {
    await this.db.requireTransaction('credentials insert').execute(sql`
      insert into store_credentials (workspace_id, store_id, version, key_id, iv, ciphertext, auth_tag, created_by)
      values (app_current_workspace(), ${storeId}, ${version}, ${enc.keyId}, ${enc.iv}, ${enc.ciphertext}, ${enc.authTag}, ${createdBy})`);
  }

  /** Locks the store and moves it to the next credential version, back to pending_verification. */
  async advanceCredentialVersion(storeId: string): Promise<number | undefined> {
    const { rows } = await this.db.requireTransaction('credentials replace').execute<
      Pick<SqlRow<typeof stores>, 'credential_version'>
    >(sql`
      update stores set credential_version = credential_version + 1, status = 'pending_verification',
             verified_at = null, updated_at = now()
       where workspace_id = app_current_workspace() and id = ${storeId}
      returning credential_version`);
    return rows[0]?.credential_version;
  }

  async findView(id: string): Promise<StoreView | undefined> {
    const { rows } = await this.db.executor.execute<StoreRow>(
      sql`${VIEW} where s.workspace_id = app_current_workspace() and s.id = ${id}`,
    );
    return rows[0] && toView(rows[0]);
  }

  /**
   * The store exactly as the request that stored credential `version` returned it: pending
   * verification, no shop name yet, from immutable columns only (id, platform, external id,
   * created_at, the credential row's created_at).
   */
  async findAsAccepted(id: string, version: number): Promise<StoreView | undefined> {
    const { rows } = await this.db.executor.execute<StoreRow>(sql`
      select s.id, s.platform, s.store_external_id, 'pending_verification' as status, c.version as credential_version,
             null as shop_name, s.created_at, c.created_at as credentials_updated_at
        from stores s
        join store_credentials c on c.workspace_id = s.workspace_id and c.store_id = s.id
       where s.workspace_id = app_current_workspace() and s.id = ${id} and c.version = ${version}`);
    return rows[0] && toView(rows[0]);
  }

  async list(limit: number, after?: PagePosition): Promise<StoreView[]> {
    const { rows } = await this.db.executor.execute<StoreRow>(sql`
      ${VIEW} where s.workspace_id = app_current_workspace() ${afterCursor(after, sql`s.created_at`, sql`s.id`)}
       ${pageOrder(sql`s.created_at`, sql`s.id`)} limit ${limit}`);
    return rows.map(toView);
  }

  async findState(id: string): Promise<StoreState | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof stores>, 'id' | 'store_external_id' | 'status' | 'credential_version'>
    >(sql`
      select id, store_external_id, status, credential_version from stores
       where workspace_id = app_current_workspace() and id = ${id}`);
    const row = rows[0];
    return (
      row && {
        id: row.id,
        storeExternalId: row.store_external_id,
        status: row.status,
        credentialVersion: row.credential_version,
      }
    );
  }

  async findCredentials(storeId: string, version: number): Promise<EncryptedCredentials | undefined> {
    const { rows } = await this.db.executor.execute<
      Pick<SqlRow<typeof storeCredentials>, 'key_id' | 'iv' | 'ciphertext' | 'auth_tag'>
    >(sql`
      select key_id, iv, ciphertext, auth_tag from store_credentials
       where workspace_id = app_current_workspace() and store_id = ${storeId} and version = ${version}`);
    const row = rows[0];
    return row && { keyId: row.key_id, iv: row.iv, ciphertext: row.ciphertext, authTag: row.auth_tag };
  }

  /** pending_verification → active | invalid_credentials, only while `version` is current. */
  async finishVerification(
    storeId: string,
    version: number,
    outcome: { valid: true; shopName: string | null } | { valid: false },
  ): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update stores
         set status = ${outcome.valid ? 'active' : 'invalid_credentials'},
             shop_name = ${outcome.valid ? outcome.shopName : null},
             verified_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${storeId}
         and credential_version = ${version} and status = 'pending_verification'`);
    return r.rowCount === 1;
  }

  /** pending_verification → verification_failed (no verdict), only while `version` is current. */
  async failVerification(storeId: string, version: number): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update stores set status = 'verification_failed', updated_at = now()
       where workspace_id = app_current_workspace() and id = ${storeId}
         and credential_version = ${version} and status = 'pending_verification'`);
    return r.rowCount === 1;
  }

  /**
   * active → invalid_credentials: a check found the current credentials refused. Only while
   * `version` is still current and the store active (a replacement since is checked on its own).
   */
  async rejectActiveCredentials(storeId: string, version: number): Promise<boolean> {
    const r = await this.db.executor.execute(sql`
      update stores set status = 'invalid_credentials', shop_name = null, verified_at = now(), updated_at = now()
       where workspace_id = app_current_workspace() and id = ${storeId}
         and credential_version = ${version} and status = 'active'`);
    return r.rowCount === 1;
  }
}

function toView(row: StoreRow): StoreView {
  return {
    id: row.id,
    platform: row.platform,
    storeExternalId: row.store_external_id,
    status: row.status,
    credentialVersion: row.credential_version,
    shopName: row.shop_name,
    createdAt: new Date(row.created_at).toISOString(),
    credentialsUpdatedAt: new Date(row.credentials_updated_at).toISOString(),
  };
}
