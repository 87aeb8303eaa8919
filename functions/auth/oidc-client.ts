/**
 * The service as an OpenID Connect client (authorization code flow with PKCE, `state` and `nonce`),
 * through `openid-client`. The same code talks to Amazon Cognito when deployed and to the local OpenID
 * provider of `npm start`; only the settings differ:
 * - `OIDC_ISSUER`: the issuer URL (discovery at `<issuer>/.well-known/openid-configuration`);
 * - `OIDC_CLIENT_ID`;
 * - `OIDC_CLIENT_SECRET` (local) or `OIDC_CLIENT_SECRET_ARN` (deployed: a Secrets Manager secret whose
 *   string is the secret itself or `{"clientSecret": "..."}`);
 * - `PUBLIC_ORIGIN`: the callback is `<PUBLIC_ORIGIN>/api/auth/callback`.
 * The ID token (signature against the issuer's JWKS, `iss`, `aud`, expiry, `nonce`) is validated by
 * openid-client for both issuers.
 */

import * as client from 'openid-client';
import { getSecretString } from '../aws/secrets-manager';
import {
  type Env,
  OIDC_CLIENT_ID,
  OIDC_CLIENT_SECRET,
  OIDC_CLIENT_SECRET_ARN,
  OIDC_ISSUER,
  publicOrigin,
  readEnv,
} from '../environment/environment';

export const CALLBACK_PATH = '/api/auth/callback';
/** `email` to match invitations; nothing else is asked of the provider. */
export const SCOPES = 'openid email';

let cached: Promise<client.Configuration> | undefined;

async function clientSecret(env?: Env): Promise<string> {
  const plain = readEnv(OIDC_CLIENT_SECRET, env);
  if (plain) return plain;
  const arn = readEnv(OIDC_CLIENT_SECRET_ARN, env);
  if (!arn) throw new Error('OpenID client not configured: set OIDC_CLIENT_SECRET or OIDC_CLIENT_SECRET_ARN');
  const text = (await getSecretString(arn, env)).trim();
  if (!text.startsWith('{')) return text;
  const parsed = JSON.parse(text) as { clientSecret?: unknown };
  if (typeof parsed.clientSecret !== 'string' || parsed.clientSecret === '') {
    throw new Error('OpenID client secret is JSON without a non-empty "clientSecret" field');
  }
  return parsed.clientSecret;
}

/** Plain http is accepted only for a provider on this machine (the local stack). */
function isLoopback(url: URL): boolean {
  return url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
}

/** The provider's configuration, discovered once per container (a failure is retried next time). */
export function oidcConfiguration(env?: Env): Promise<client.Configuration> {
  cached ??= (async () => {
    const issuer = readEnv(OIDC_ISSUER, env);
    const clientId = readEnv(OIDC_CLIENT_ID, env);
    if (!issuer || !clientId) throw new Error('OpenID client not configured: set OIDC_ISSUER and OIDC_CLIENT_ID');
    const issuerUrl = new URL(issuer);
    const insecure = issuerUrl.protocol === 'http:';
    if (insecure && !isLoopback(issuerUrl)) throw new Error('OIDC_ISSUER must be https (plain http only on loopback)');
    return client.discovery(
      issuerUrl,
      clientId,
      await clientSecret(env),
      undefined,
      insecure ? { execute: [client.allowInsecureRequests] } : undefined,
    );
  })().catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  return cached;
}

/** The registered redirect URI. */
export function callbackUrl(): string {
  const origin = publicOrigin();
  if (!origin) throw new Error('PUBLIC_ORIGIN is not set');
  return `${origin}${CALLBACK_PATH}`;
}

/** The provider's authorization URL for an attempt with these derived secrets. */
export async function authorizationUrl(secrets: { codeVerifier: string; state: string; nonce: string }): Promise<URL> {
  const config = await oidcConfiguration();
  return client.buildAuthorizationUrl(config, {
    redirect_uri: callbackUrl(),
    scope: SCOPES,
    code_challenge: await client.calculatePKCECodeChallenge(secrets.codeVerifier),
    code_challenge_method: 'S256',
    state: secrets.state,
    nonce: secrets.nonce,
  });
}

/** Who signed in, from the validated ID token. */
export interface SignedInIdentity {
  issuer: string;
  subject: string;
  email?: string;
  emailVerified: boolean;
}

/**
 * Exchanges the callback's code (client authentication, PKCE verifier) and validates the answer
 * against `state` and `nonce`. Throws on anything that does not check out.
 */
export async function completeSignIn(
  query: URLSearchParams,
  secrets: { codeVerifier: string; state: string; nonce: string },
): Promise<SignedInIdentity> {
  const config = await oidcConfiguration();
  const current = new URL(callbackUrl());
  current.search = query.toString();
  const tokens = await client.authorizationCodeGrant(config, current, {
    pkceCodeVerifier: secrets.codeVerifier,
    expectedState: secrets.state,
    expectedNonce: secrets.nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  if (!claims) throw new Error('The provider returned no ID token');
  return {
    issuer: claims.iss,
    subject: claims.sub,
    ...(typeof claims.email === 'string' ? { email: claims.email } : {}),
    emailVerified: claims.email_verified === true || claims.email_verified === 'true',
  };
}
