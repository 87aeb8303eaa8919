/**
 * Media storage port: where completed results are copied so that the service, not the provider,
 * serves them. Two implementations: S3 (deployed) and the filesystem (local stack).
 */
import type { TaskType } from '../core/task';

export interface StoredMedia {
  key: string;
  contentType: string;
  bytes: number;
}

/**
 * Handing out stored results: all the API functions need (they copy nothing), so their bundles leave
 * the copying code (`source.ts`, the address checks) out.
 */
export interface MediaUrls {
  /**
   * A URL the API consumer can GET (signed and expiring on S3).
   * @param notAfter when the object will be gone: a signed URL is not made to outlive it
   */
  urlFor(key: string, notAfter?: Date): Promise<string>;
}

/** Copying results in and handing them out: the media worker's and the sweeper's store. */
export interface MediaStore extends MediaUrls {
  /**
   * Streams the file at `sourceUrl` into storage under `keyBase` plus the extension of the type the
   * source sent (`.png`, `.mp4`, ...); the returned `key` is the stored one.
   * @throws MediaCopyError when the source URL is not allowed (scheme, host, address: see
   *   `source-policy.ts`), is unreachable, answers non-2xx, is not an allowed media type of `kind`
   *   (declared and by its first bytes), or is larger than the limit.
   */
  copyFromUrl(sourceUrl: string, keyBase: string, kind: TaskType): Promise<StoredMedia>;
}

/** A result could not be copied; the lifecycle fails the task with STORAGE_ERROR and refunds it. */
export class MediaCopyError extends Error {
  override readonly name = 'MediaCopyError';
}

/** The media key (without extension) of result `index` of a task; one place so both adapters lay files out alike. */
export function mediaKey(userId: string, taskId: string, index: number): string {
  return `results/${encodeURIComponent(userId)}/${taskId}/${index}`;
}
