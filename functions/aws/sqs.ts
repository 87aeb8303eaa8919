/**
 * SQS without its SDK client: one `SendMessage` (AWS JSON 1.0 protocol) signed by the SDK's own SigV4
 * signer (`./signer`), as `secrets-manager.ts` does for Secrets Manager. Used by the dispatcher to
 * schedule its own wake-up with a delivery delay.
 */
import {
  AWS_DEFAULT_REGION,
  AWS_ENDPOINT_URL,
  AWS_ENDPOINT_URL_SQS,
  AWS_REGION,
  type Env,
  readEnv,
} from '../environment/environment';
import { credentialsFromEnv, signRequest } from './signer';

const SQS_TIMEOUT_MS = 5_000;
/** SQS's longest delivery delay. */
export const MAX_DELAY_SECONDS = 900;

/**
 * Sends `body` to the queue at `queueUrl`, delivered after `delaySeconds` (0-900).
 * Endpoint overridable with `AWS_ENDPOINT_URL_SQS` or `AWS_ENDPOINT_URL` (LocalStack).
 */
export async function sendDelayedMessage(
  input: { queueUrl: string; body: string; delaySeconds: number },
  env?: Env,
  doFetch: typeof fetch = fetch,
): Promise<void> {
  const region = readEnv(AWS_REGION, env) ?? readEnv(AWS_DEFAULT_REGION, env);
  if (!region) throw new Error('AWS_REGION is not set');
  const endpoint =
    readEnv(AWS_ENDPOINT_URL_SQS, env) ?? readEnv(AWS_ENDPOINT_URL, env) ?? `https://sqs.${region}.amazonaws.com/`;
  const url = new URL('/', endpoint);
  const body = JSON.stringify({
    QueueUrl: input.queueUrl,
    MessageBody: input.body,
    DelaySeconds: Math.min(Math.max(Math.ceil(input.delaySeconds), 0), MAX_DELAY_SECONDS),
  });
  const headers = await signRequest({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessage' },
    body,
    service: 'sqs',
    region,
    credentials: credentialsFromEnv(env),
  });
  const { host: _host, ...sendHeaders } = headers;
  const response = await doFetch(url, {
    method: 'POST',
    headers: sendHeaders,
    body,
    signal: AbortSignal.timeout(SQS_TIMEOUT_MS),
  });
  const text = await response.text();
  if (!response.ok) {
    let type = 'unknown error';
    try {
      const parsed = JSON.parse(text) as { __type?: unknown };
      if (typeof parsed.__type === 'string') type = parsed.__type;
    } catch {
      // not JSON: the status says enough
    }
    throw new Error(`SQS SendMessage failed: HTTP ${response.status} ${type}`);
  }
}
