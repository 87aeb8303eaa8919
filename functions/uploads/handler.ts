/**
 * POST /api/ai/uploads `{ contentType, size }`: 201 `{ uploadId, uploadUrl, uploadFields, expiresAt,
 * url }`. The caller POSTs the file to `uploadUrl` with `uploadFields`, then names `url` in
 * `inputImageUrls`. A key or a session (with the CSRF rules of every session write).
 */
import { validateUploadRequest } from '../core/uploads';
import { apiHandler } from '../http/api-handler';
import { createUpload } from '../lifecycle/create-upload';
import { uploadPosterFromEnv, uploadSettingsFromEnv } from '../runtime/uploads-from-env';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: true }, async (req) => {
  const settings = uploadSettingsFromEnv();
  const request = validateUploadRequest(req.body, settings.maxBytes);
  const created = await createUpload(
    { store: storeFromEnv(), poster: uploadPosterFromEnv(), settings, now: new Date() },
    req.caller.userId,
    request,
  );
  return { statusCode: 201, body: created };
});
