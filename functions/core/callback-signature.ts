/**
 * The per-task secret of a provider callback URL: an HMAC-SHA256 of the task's identity under the
 * service's callback secret. Only the service can make one, so a callback URL cannot be guessed or
 * forged for another task, and the service keeps no per-task secret in storage.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The path of the callback route; the task id is its one path parameter. */
export const CALLBACK_PATH_PREFIX = '/api/provider/callbacks/';

/**
 * What is signed: the owner and the task, on one line each after a purpose tag (so the same secret
 * could never sign anything else into a valid callback).
 */
function signedText(userId: string, taskId: string): string {
  return `provider-callback\n${userId}\n${taskId}`;
}

/** The signature of a task's callback URL (base64url, 43 characters). */
export function callbackSignature(secret: string, userId: string, taskId: string): string {
  return createHmac('sha256', secret).update(signedText(userId, taskId)).digest('base64url');
}

/**
 * Whether `given` is the signature of this task, compared in constant time (a timing difference
 * would let a caller find a valid signature byte by byte).
 */
export function callbackSignatureMatches(secret: string, userId: string, taskId: string, given: string): boolean {
  const expected = Buffer.from(callbackSignature(secret, userId, taskId));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * The callback URL handed to the provider with a task: `<base>/api/provider/callbacks/<taskId>?u=<userId>&sig=<signature>`.
 * The owner travels along because tasks are stored under their owner; the signature covers both. With
 * an upstreams list, `up=<upstream>` names the upstream whose key signed it ({@link upstreamCallbackSecret}).
 */
export function callbackUrl(
  baseUrl: string,
  secret: string,
  userId: string,
  taskId: string,
  upstream?: string,
): string {
  const query = new URLSearchParams({
    u: userId,
    sig: callbackSignature(secret, userId, taskId),
    ...(upstream === undefined ? {} : { up: upstream }),
  });
  return `${baseUrl.replace(/\/+$/, '')}${CALLBACK_PATH_PREFIX}${encodeURIComponent(taskId)}?${query.toString()}`;
}

/**
 * The key that signs the callback URLs handed to one upstream of an upstreams list: derived from the
 * service's callback secret and the upstream's name, so each upstream has its own (a URL signed for one
 * upstream never verifies as another's) and no secret more needs keeping or rotating.
 */
export function upstreamCallbackSecret(secret: string, upstream: string): string {
  return createHmac('sha256', secret).update(`upstream-callback\n${upstream}`).digest('base64url');
}
