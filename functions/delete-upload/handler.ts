/**
 * DELETE /api/ai/uploads/{id}: removes the caller's upload (its file, the checked copy of its current
 * version, its record); 204. Unknown, expired, another owner's or already deleted: 404. An API key or a
 * session (with the CSRF check).
 */
import { UploadNotFoundError } from '../core/errors';
import { apiHandler } from '../http/api-handler';
import { deleteUpload } from '../lifecycle/delete-data';
import { removalFromEnv } from '../runtime/removal-from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const uploadId = req.pathParameters.id;
  if (!uploadId) throw new UploadNotFoundError();
  await deleteUpload(removalFromEnv(), { userId: req.caller.userId, uploadId }, req.log);
  return { statusCode: 204, body: undefined };
});
