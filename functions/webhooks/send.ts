/**
 * One delivery attempt: a signed POST to the customer's endpoint, judged and connected exactly like a
 * provider result download (`media/public-address.ts`: every address the host resolves to must be
 * public, and the socket goes to the address that was checked, so DNS rebinding does not work).
 *
 * A slow or hostile endpoint costs little: one deadline for the whole exchange (10 s), redirects are
 * never followed (a 3xx is a failed attempt: following one would let an endpoint point the service
 * anywhere), and at most 1 KB of the answer is read. Signed with the `standardwebhooks` package, the
 * specification's reference implementation.
 */
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Webhook } from 'standardwebhooks';
import { WEBHOOK_RESPONSE_BYTES, WEBHOOK_TIMEOUT_MS } from '../core/webhooks';
import { pinnedLookup, type ResolveHost, resolvePublicAddress } from '../media/public-address';
import { bareHost, isTrustedOrigin, type SourcePolicy } from '../media/source-policy';
import { webhookUrlProblem } from './target-policy';

/** What one attempt came to: an HTTP status, or why there was none. */
export interface AttemptOutcome {
  statusCode?: number;
  /** Why no status was received or the endpoint was not called (never holds the secret or the body). */
  error?: string;
  durationMs: number;
}

/** The message of a delivery: the same id on every attempt, a timestamp per attempt. */
export interface WebhookMessage {
  /** `webhook-id`: stable across the retries of one delivery, so receivers can drop duplicates. */
  id: string;
  /** `webhook-timestamp` (signed with the body, so a captured request cannot be replayed later). */
  timestamp: Date;
  /** The JSON body, exactly the bytes that are signed and sent. */
  body: string;
}

export interface SendOptions {
  policy: SourcePolicy;
  /** Default: the system resolver. Tests inject DNS answers. */
  resolve?: ResolveHost;
  timeoutMs?: number;
}

/**
 * The Standard Webhooks headers (and the content type) of a message signed with `secret` (`whsec_...`),
 * or with each of several secrets: during a rotation's grace the signatures of the new and the previous
 * secret go space-separated in one `webhook-signature`, which the specification allows so that a
 * receiver holding either secret accepts the message.
 */
export function signedHeaders(message: WebhookMessage, secret: string | readonly string[]): Record<string, string> {
  const secrets = typeof secret === 'string' ? [secret] : secret;
  return {
    'content-type': 'application/json',
    'webhook-id': message.id,
    'webhook-timestamp': String(Math.floor(message.timestamp.getTime() / 1000)),
    'webhook-signature': secrets
      .map((each) => new Webhook(each).sign(message.id, message.timestamp, message.body))
      .join(' '),
  };
}

/**
 * Sends `message` to `target`. Never throws: every failure is an outcome to record. The endpoint is
 * not called at all when the URL or its addresses are refused.
 */
export async function sendWebhook(
  target: string,
  message: WebhookMessage,
  secret: string | readonly string[],
  options: SendOptions,
): Promise<AttemptOutcome> {
  const started = performance.now();
  const done = (outcome: Omit<AttemptOutcome, 'durationMs'>): AttemptOutcome => ({
    ...outcome,
    durationMs: Math.round(performance.now() - started),
  });
  const problem = webhookUrlProblem(target, options.policy);
  if (problem) return done({ error: `Endpoint refused: ${problem}` });
  const url = new URL(target);
  const timeoutMs = options.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  const signal = AbortSignal.timeout(timeoutMs);
  let pinned: Parameters<typeof pinnedLookup>[0] | undefined;
  if (!isTrustedOrigin(url, options.policy)) {
    const checked = await resolvePublicAddress(url, options.resolve);
    if ('refused' in checked) return done({ error: `Endpoint refused: ${checked.refused}` });
    if ('unreachable' in checked) return done({ error: `Endpoint unreachable: ${checked.unreachable}` });
    pinned = checked.pinned;
  }
  const body = Buffer.from(message.body);
  const requestOptions: RequestOptions = {
    method: 'POST',
    protocol: url.protocol,
    hostname: bareHost(url),
    port: url.port || undefined,
    path: `${url.pathname}${url.search}`,
    headers: {
      ...signedHeaders(message, secret),
      'content-length': String(body.byteLength),
      'user-agent': 'generation-service-webhooks/1',
    },
    signal,
    ...(pinned ? { lookup: pinnedLookup(pinned) } : {}),
  };
  try {
    const response = await post(url, requestOptions, body);
    const statusCode = response.statusCode ?? 0;
    await drain(response, WEBHOOK_RESPONSE_BYTES);
    if (statusCode >= 300 && statusCode <= 399) {
      return done({ statusCode, error: 'Redirect not followed: webhook endpoints must answer themselves' });
    }
    return done({ statusCode });
  } catch (error) {
    if (signal.aborted) return done({ error: `No answer within ${timeoutMs / 1000} s` });
    const code = (error as NodeJS.ErrnoException).code;
    return done({ error: `Connection failed${code ? `: ${code}` : ''}` });
  }
}

function post(url: URL, options: RequestOptions, body: Buffer): Promise<IncomingMessage> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(options, resolve);
    req.once('error', reject);
    req.end(body);
  });
}

/** Reads at most `limit` bytes of the answer, then lets the connection go (nothing more is read). */
function drain(response: IncomingMessage, limit: number): Promise<void> {
  return new Promise((resolve) => {
    let read = 0;
    const finish = () => {
      response.removeAllListeners('data');
      response.destroy();
      resolve();
    };
    response.on('data', (chunk: Buffer) => {
      read += chunk.byteLength;
      if (read >= limit) finish();
    });
    response.once('end', finish);
    response.once('error', finish);
    response.once('close', finish);
  });
}
