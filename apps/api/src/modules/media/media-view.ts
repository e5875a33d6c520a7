export type MediaStatus = 'awaiting_content' | 'uploaded' | 'processing' | 'ready' | 'failed';

/** What the media endpoints return. Object keys are storage references, never URLs. */
export interface MediaView {
  id: string;
  status: MediaStatus;
  filename: string;
  contentType: string;
  size: number;
  objectKey: string;
  checksumSha256: string | null;
  width: number | null;
  height: number | null;
  thumbnail: { objectKey: string; contentType: 'image/png'; width: number; height: number } | null;
  error: { code: string; message: string } | null;
  operationId: string | null;
  createdAt: string;
  updatedAt: string;
  uploadedAt: string | null;
  completedAt: string | null;
  processedAt: string | null;
}
