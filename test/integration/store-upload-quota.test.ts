/**
 * The quota of open uploads (store/upload-quota.ts) on DynamoDB Local: uploads end by expiring, which
 * writes nothing, so an upload that finds the count full counts the records again before its 429.
 */
import { UploadQuotaError } from '../../functions/core/uploads';
import { putCountedUpload } from '../../functions/store/upload-quota';
import type { UploadRecord } from '../../functions/store/uploads';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { newUserId, T0 } from '../support/store-fixtures';

describe('the quota of open uploads (DynamoDB Local)', () => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore();
  });

  afterAll(async () => {
    await store.dispose();
  });

  /** An upload of `userId` made at `at`, expiring a minute later. */
  function upload(userId: string, at: Date): UploadRecord {
    const uploadId = `${at.getTime()}-${Math.random().toString(16).slice(2)}`;
    return {
      userId,
      uploadId,
      key: `uploads/${userId}/${uploadId}`,
      contentType: 'image/png',
      declaredBytes: 100,
      maxBytes: 4096,
      createdAt: at.toISOString(),
      expiresAt: new Date(at.getTime() + 60_000).toISOString(),
    };
  }

  it('refuses the upload past the quota while the others are open, and takes it once one has expired', async () => {
    // Prepare: a quota of 2, both places taken at T0.
    const userId = newUserId();
    await putCountedUpload(store, upload(userId, T0), { maxOpen: 2, now: T0 });
    await putCountedUpload(store, upload(userId, T0), { maxOpen: 2, now: T0 });
    const later = new Date(T0.getTime() + 30_000);
    const afterExpiry = new Date(T0.getTime() + 61_000);

    // Act
    const whileOpen = putCountedUpload(store, upload(userId, later), { maxOpen: 2, now: later });
    await expect(whileOpen).rejects.toEqual(new UploadQuotaError(2));
    await putCountedUpload(store, upload(userId, afterExpiry), { maxOpen: 2, now: afterExpiry });
    await putCountedUpload(store, upload(userId, afterExpiry), { maxOpen: 2, now: afterExpiry });
    const third = putCountedUpload(store, upload(userId, afterExpiry), { maxOpen: 2, now: afterExpiry });

    // Assert: the two expired ones freed their places, and the quota holds again.
    await expect(third).rejects.toBeInstanceOf(UploadQuotaError);
  });
});
