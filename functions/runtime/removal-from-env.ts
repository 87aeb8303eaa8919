/**
 * Wires deleting from the environment (lifecycle/delete-data.ts): the table, the result files and the
 * uploads.
 */
import type { RemovalContext } from '../lifecycle/delete-data';
import { resultRemoverFromEnv, uploadRemoverFromEnv } from '../media/remove-objects';
import { uploadReaderFromEnv } from '../media/uploads';
import { storeFromEnv } from '../store/from-env';

type Removal = RemovalContext & { versionOf: (key: string) => Promise<string | undefined> };

/**
 * The removal wiring of this environment, built per request: nothing in it holds a connection (the
 * store is the cached one), and the environment is read afresh, as the tests change it.
 */
export function removalFromEnv(): Removal {
  const reader = uploadReaderFromEnv();
  return {
    store: storeFromEnv(),
    results: resultRemoverFromEnv(),
    uploads: uploadRemoverFromEnv(),
    now: () => new Date(),
    versionOf: async (key) => (reader ? (await reader.head(key, 1))?.etag : undefined),
  };
}
