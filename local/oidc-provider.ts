/**
 * A real OpenID Connect provider for `npm start` (the `oidc-provider` library, certified by the OpenID
 * Foundation), standing in for the Cognito user pool of the deployment. It has the service as its one
 * confidential client (authorization code flow, PKCE required), signs ID tokens with a key made at
 * start, knows a fixed list of accounts (e-mail + password, e-mails verified), and shows a plain login
 * form. Consent is implied for the first-party client, as in Cognito's hosted sign-in. It keeps
 * everything in memory and listens on 127.0.0.1 only.
 */
import { generateKeyPair, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import type { JWK } from 'oidc-provider';

export interface LocalAccount {
  email: string;
  password: string;
}

export interface LocalOidcProviderOptions {
  host: string;
  port: number;
  clientId: string;
  clientSecret: string;
  /** The service's callback URL, the only redirect URI allowed. */
  redirectUri: string;
  accounts: LocalAccount[];
}

export interface LocalOidcProvider {
  issuer: string;
  stop(): Promise<void>;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function loginPage(uid: string, error?: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in (local identity provider)</title></head>
<body><main>
<h1>Sign in</h1>
<p>Local stand-in for the deployment's Amazon Cognito sign-in page.</p>
${error ? `<p role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/interaction/${escapeHtml(uid)}/login">
<p><label for="email">E-mail</label> <input id="email" name="email" type="email" autocomplete="username" required></p>
<p><label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p>
</form>
</main></body></html>`;
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 16 * 1024) throw new Error('form too large');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

const generateRsaKeyPair = promisify(generateKeyPair);

/** Starts the provider; resolves once it listens. */
export async function startLocalOidcProvider(options: LocalOidcProviderOptions): Promise<LocalOidcProvider> {
  // oidc-provider is an ES module (and so is its configuration's Koa context); loaded on demand.
  const [{ default: Provider }, { privateKey }] = await Promise.all([
    import('oidc-provider'),
    generateRsaKeyPair('rsa', { modulusLength: 2048 }),
  ]);
  const issuer = `http://${options.host}:${options.port}`;
  const accounts = new Map(options.accounts.map((account) => [account.email.toLowerCase(), account]));
  const jwk = { ...(privateKey.export({ format: 'jwk' }) as JWK), use: 'sig', alg: 'RS256', kid: 'local-1' };

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: options.clientId,
        client_secret: options.clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    // The account id is the e-mail address, as the subject of a Cognito user is stable per user.
    findAccount: async (_ctx, id) =>
      accounts.has(id)
        ? { accountId: id, claims: async () => ({ sub: id, email: id, email_verified: true }) }
        : undefined,
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // Put the e-mail claims into the ID token, as Cognito does, rather than only into userinfo.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
    // First-party client: consent is implied, so the grant is made here instead of asking.
    loadExistingGrant: async (ctx) => {
      const grantId =
        ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session?.grantIdFor(ctx.oidc.client?.clientId ?? '');
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const accountId = ctx.oidc.session?.accountId;
      const clientId = ctx.oidc.client?.clientId;
      if (!accountId || !clientId) return undefined;
      const grant = new ctx.oidc.provider.Grant({ accountId, clientId });
      grant.addOIDCScope('openid email');
      grant.addOIDCClaims(['email', 'email_verified']);
      await grant.save();
      return grant;
    },
  });
  const callback = provider.callback();

  async function interaction(req: IncomingMessage, res: ServerResponse, uid: string, login: boolean): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) throw new Error('interaction mismatch');
    if (!login) {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(loginPage(uid));
      return;
    }
    const form = await readForm(req);
    const email = (form.get('email') ?? '').trim().toLowerCase();
    const account = accounts.get(email);
    if (!account || !sameSecret(account.password, form.get('password') ?? '')) {
      res.writeHead(401, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(loginPage(uid, 'Wrong e-mail address or password.'));
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId: email } }, { mergeWithLastSubmission: false });
  }

  const server: Server = createServer((req, res) => {
    const match = /^\/interaction\/([A-Za-z0-9_-]+)(\/login)?$/.exec(req.url ?? '');
    if (!match?.[1]) {
      callback(req, res);
      return;
    }
    const login = match[2] !== undefined;
    if ((login && req.method !== 'POST') || (!login && req.method !== 'GET')) {
      res.writeHead(405).end();
      return;
    }
    interaction(req, res, match[1], login).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end(
          `Sign-in failed: ${error instanceof Error ? error.message : String(error)}. Start again from the service.`,
        );
      }
    });
  });
  await new Promise<void>((ready, fail) => {
    server.once('error', fail);
    server.listen(options.port, options.host, () => ready());
  });
  return {
    issuer,
    stop: () =>
      new Promise<void>((closed) => {
        server.close(() => closed());
        server.closeAllConnections();
      }),
  };
}
