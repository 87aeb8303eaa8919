/**
 * Which webhook endpoints the service may call: the rules `source-policy.ts` applies to provider result
 * URLs (https only, no credentials in the URL, never the Lambda runtime API; plain http only for the
 * exact origins a local setting names), plus rules for hosts a customer names. The same function
 * judges a `webhookUrl` at submission, an account's default endpoint in the CLI, and every delivery
 * attempt; at delivery the host's addresses are checked too (`public-address.ts`).
 *
 * The submit functions run this check, so it carries no address table (their bundle budget, measured
 * in bench/bundles.ts, had about 0.5 KB left; the table and its CIDR code are 3.5 KB). An IP literal as
 * host is therefore refused outright, public or not: a webhook endpoint is named by a host name (its
 * TLS certificate names one too), and a host name is resolved and checked at every attempt.
 */

import { isIP } from 'node:net';
import { MAX_WEBHOOK_URL_LENGTH } from '../core/webhooks';
import { AWS_LAMBDA_RUNTIME_API, type Env, readEnv, WEBHOOK_INSECURE_ORIGINS } from '../environment/environment';
import { bareHost, insecureOriginsFrom, isTrustedOrigin, refuseUrl, type SourcePolicy } from '../media/source-policy';

/** Names that only ever mean this machine or a private network. */
const PRIVATE_NAME = /(^|\.)(localhost|local|internal|localdomain|home\.arpa)$/;

/**
 * The policy for webhook endpoints: `WEBHOOK_INSECURE_ORIGINS` (exact origins allowed over plain
 * http to any address; only the local stack sets it), no host allowlist (customers name their own
 * hosts; `mediaSourceHosts` is about the provider), the Lambda runtime API refused.
 * @throws Error when an insecure origin is not a bare origin
 */
export function webhookTargetPolicy(env?: Env): SourcePolicy {
  const runtimeApi = readEnv(AWS_LAMBDA_RUNTIME_API, env);
  return {
    insecureOrigins: insecureOriginsFrom(readEnv(WEBHOOK_INSECURE_ORIGINS, env), WEBHOOK_INSECURE_ORIGINS.name),
    allowedHosts: [],
    ...(runtimeApi ? { runtimeApi } : {}),
  };
}

/** Why `text` may not be a webhook endpoint (a message for the caller), or undefined when it may. */
export function webhookUrlProblem(text: string, policy: SourcePolicy): string | undefined {
  if (text.length > MAX_WEBHOOK_URL_LENGTH) return `Must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'Must be an https URL';
  }
  const refused = refuseUrl(url, policy);
  if (refused) return `Must be an https URL (refused: ${refused})`;
  if (isTrustedOrigin(url, policy)) return undefined;
  const host = bareHost(url).replace(/\.$/, '');
  if (isIP(host) || !host.includes('.') || PRIVATE_NAME.test(host))
    return 'Must name a public host (not an IP address)';
  return undefined;
}
