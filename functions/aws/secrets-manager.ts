/**
 * Secrets Manager without its SDK client (which would put the Lambda bundles far past their budget):
 * one `GetSecretValue` call signed by the SDK's own SigV4 signer (`./signer`). The provider key and the OpenID client secret are read with it.
 */
import {
  AWS_DEFAULT_REGION,
  AWS_ENDPOINT_URL,
  AWS_ENDPOINT_URL_SECRETS_MANAGER,
  AWS_REGION,
  type Env,
  readEnv,
} from '../environment/environment';
import { credentialsFromEnv, signRequest } from './signer';

const SECRETS_MANAGER_TIMEOUT_MS = 5_000;

/**
 * The `SecretString` of a secret (`secretsmanager:GetSecretValue`), over a SigV4-signed `fetch`.
 * Region from `AWS_REGION` (or `AWS_DEFAULT_REGION`); credentials from the environment Lambda provides;
 * endpoint overridable with `AWS_ENDPOINT_URL_SECRETS_MANAGER` or `AWS_ENDPOINT_URL` (LocalStack).
 */
export async function getSecretString(secretId: string, env?: Env, doFetch: typeof fetch = fetch): Promise<string> {
  const region = readEnv(AWS_REGION, env) ?? readEnv(AWS_DEFAULT_REGION, env);
  if (!region) throw new Error('AWS_REGION is not set');
  const endpoint =
    readEnv(AWS_ENDPOINT_URL_SECRETS_MANAGER, env) ??
    readEnv(AWS_ENDPOINT_URL, env) ??
    `https://secretsmanager.${region}.amazonaws.com/`;
  const url = new URL('/', endpoint);
  const body = JSON.stringify({ SecretId: secretId });
  const headers = await signRequest({
    method: 'POST',
    url,
    headers: {
      'content-type': 'application/x-amz-json-1.1',
      'x-amz-target': 'secretsmanager.GetSecretValue',
    },
    body,
    service: 'secretsmanager',
    region,
    credentials: credentialsFromEnv(env),
  });
  // `host` is set by fetch itself from the URL (it is a forbidden header); the signed value is the same.
  const { host: _host, ...sendHeaders } = headers;

  const response = await doFetch(url, {
    method: 'POST',
    headers: sendHeaders,
    body,
    signal: AbortSignal.timeout(SECRETS_MANAGER_TIMEOUT_MS),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const record = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  if (!response.ok) {
    // Only the error type is surfaced; the body is AWS's, but there is no reason to echo it.
    const type = typeof record.__type === 'string' ? record.__type : 'unknown error';
    throw new Error(`Secrets Manager GetSecretValue failed: HTTP ${response.status} ${type}`);
  }
  const secretString = record.SecretString;
  if (typeof secretString !== 'string' || secretString.length === 0) {
    throw new Error('Secrets Manager GetSecretValue: the secret has no SecretString');
  }
  return secretString;
}
