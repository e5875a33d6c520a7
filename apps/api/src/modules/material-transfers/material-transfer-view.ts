export type TransferStatus = 'pending' | 'running' | 'succeeded' | 'failed';

/** What the material-transfer endpoints return. `sourceUrl` is the source key: no signatures. */
export interface MaterialTransferView {
  id: string;
  status: TransferStatus;
  sourceUrl: string;
  objectKey: string;
  contentType: string | null;
  size: number | null;
  checksumSha256: string | null;
  width: number | null;
  height: number | null;
  error: { code: string; message: string } | null;
  operationId: string;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}
