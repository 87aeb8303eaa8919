/**
 * Sessions, CSRF and the key management request rules: the pure parts, without a store.
 */

import { cookieValues, sessionIdFromHeaders } from '../../functions/auth/session-cookie';
import { ValidationError } from '../../functions/core/errors';
import { parseCreateKey, parseRotateKey } from '../../functions/core/key-requests';
import {
  csrfTokenFor,
  csrfTokenMatches,
  generateOpaqueId,
  hashSessionId,
  isOpaqueIdFormat,
  normalizeEmail,
  sessionUnusable,
  signInSecrets,
  touchDue,
} from '../../functions/core/session';
import { clearSessionCookie, sessionCookie } from '../../functions/http/cookies';
import { checkCsrf } from '../../functions/http/csrf';

const NOW = new Date('2030-01-01T00:00:00Z');
const NOW_S = NOW.getTime() / 1000;

describe('session ids and what is derived from them', () => {
  test('an id is 43 base64url characters; the stored hash and the CSRF token differ from it and from each other', () => {
    // Act
    const id = generateOpaqueId();

    // Assert
    expect(isOpaqueIdFormat(id)).toBe(true);
    expect(hashSessionId(id)).not.toBe(id);
    expect(csrfTokenFor(id)).not.toBe(hashSessionId(id));
    expect(csrfTokenMatches(id, csrfTokenFor(id))).toBe(true);
    expect(csrfTokenMatches(id, csrfTokenFor(generateOpaqueId()))).toBe(false);
    expect(csrfTokenMatches(id, undefined)).toBe(false);
  });

  test('the sign-in secrets are distinct and reproducible from the attempt id alone', () => {
    // Prepare
    const attempt = generateOpaqueId();

    // Act
    const first = signInSecrets(attempt);
    const again = signInSecrets(attempt);

    // Assert
    expect(again).toEqual(first);
    expect(new Set([first.codeVerifier, first.state, first.nonce]).size).toBe(3);
    expect(first.codeVerifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe('expiry', () => {
  const session = { idleExpiresAt: NOW_S + 100, absoluteExpiresAt: NOW_S + 1000 };

  test.each([
    ['usable before both expiries', session, NOW_S, undefined],
    ['expired at the idle expiry', session, NOW_S + 100, 'expired'],
    ['expired at the absolute expiry', { ...session, idleExpiresAt: NOW_S + 5000 }, NOW_S + 1000, 'expired'],
    ['revoked wins', { ...session, revokedAt: NOW_S - 1 }, NOW_S, 'revoked'],
  ])('%s', (_name, times, at, expected) => {
    // Act
    const result = sessionUnusable(times, at);

    // Assert
    expect(result).toBe(expected);
  });

  test('activity extends the idle expiry at most once a minute', () => {
    // Act
    const soon = touchDue({ idleExpiresAt: NOW_S + 3600, absoluteExpiresAt: NOW_S + 99999 }, NOW_S + 30, 3600);
    const later = touchDue({ idleExpiresAt: NOW_S + 3600, absoluteExpiresAt: NOW_S + 99999 }, NOW_S + 60, 3600);

    // Assert
    expect(soon).toBe(false);
    expect(later).toBe(true);
  });
});

describe('cookies', () => {
  test('the session cookie is __Host-, Secure, HttpOnly, SameSite=Lax, Path=/ and has no Domain', () => {
    // Act
    const set = sessionCookie('abc', 3600);

    // Assert
    expect(set).toBe('__Host-session=abc; Max-Age=3600; Path=/; Secure; HttpOnly; SameSite=Lax');
    expect(clearSessionCookie()).toContain('Max-Age=0');
  });

  test('two different session cookies are ambiguous (null); a malformed one too; none is undefined', () => {
    // Prepare
    const a = generateOpaqueId();
    const b = generateOpaqueId();

    // Act & Assert
    expect(sessionIdFromHeaders({ Cookie: `x=1; __Host-session=${a}` })).toBe(a);
    expect(sessionIdFromHeaders({ cookie: `__Host-session=${a}; __Host-session=${b}` })).toBeNull();
    expect(sessionIdFromHeaders({ Cookie: '__Host-session=short' })).toBeNull();
    expect(sessionIdFromHeaders({ Cookie: 'other=1' })).toBeUndefined();
    expect(cookieValues({}, { Cookie: [`__Host-session=${a}`, `__Host-session=${a}`] }, '__Host-session')).toEqual([a]);
  });
});

describe('CSRF', () => {
  const id = generateOpaqueId();
  const origin = 'https://app.example';

  test.each([
    ['no Origin', undefined, csrfTokenFor(id), 'missing-origin'],
    ['another origin', 'https://attacker.example', csrfTokenFor(id), 'cross-origin'],
    ['no token', origin, undefined, 'missing-token'],
    ['a wrong token', origin, csrfTokenFor(generateOpaqueId()), 'bad-token'],
  ])('%s is refused (%s)', (_name, requestOrigin, token, reason) => {
    // Act
    const check = () => checkCsrf({ sessionId: id, origin: requestOrigin, token, expectedOrigin: origin });

    // Assert
    expect(check).toThrow(expect.objectContaining({ reason }));
  });

  test('the same origin with the session token passes; without a configured origin nothing passes', () => {
    // Act
    const ok = () => checkCsrf({ sessionId: id, origin, token: csrfTokenFor(id), expectedOrigin: origin });
    const unconfigured = () => checkCsrf({ sessionId: id, origin, token: csrfTokenFor(id), expectedOrigin: undefined });

    // Assert
    expect(ok).not.toThrow();
    expect(unconfigured).toThrow(expect.objectContaining({ reason: 'cross-origin' }));
  });
});

describe('key management requests use the CLI rules', () => {
  test('a valid create request is canonical', () => {
    // Act
    const parsed = parseCreateKey(
      { name: 'ci', allowedCidrs: ['10.0.0.0/8', '10.0.0.0/8', '2001:db8::1'], expiresAt: '2031-01-01T00:00:00Z' },
      NOW,
    );

    // Assert
    expect(parsed).toEqual({
      name: 'ci',
      allowedCidrs: ['10.0.0.0/8', '2001:db8::1/128'],
      expiresAt: Date.UTC(2031, 0, 1) / 1000,
    });
  });

  test('bad fields are reported one per field, unknown fields too', () => {
    // Act
    const parse = () =>
      parseCreateKey({ name: ' padded', allowedCidrs: ['x'], expiresAt: '2020-01-01T00:00:00Z', admin: true }, NOW);

    const error = (() => {
      try {
        parse();
        return undefined;
      } catch (thrown) {
        return thrown;
      }
    })();

    // Assert
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.fieldErrors).toEqual({
      name: [expect.stringContaining('surrounding spaces')],
      'allowedCidrs.0': [expect.stringContaining('is not an IPv4/IPv6 address')],
      expiresAt: [expect.stringContaining('not in the future')],
      admin: ['Unknown field "admin"'],
    });
  });

  test('rotation: grace defaults to 3600 and is bounded to 30 days', () => {
    // Act & Assert
    expect(parseRotateKey({})).toEqual({ graceSeconds: 3600 });
    expect(parseRotateKey({ graceSeconds: 0 })).toEqual({ graceSeconds: 0 });
    expect(() => parseRotateKey({ graceSeconds: 30 * 86400 + 1 })).toThrow(ValidationError);
    expect(() => parseRotateKey({ graceSeconds: '60' })).toThrow(ValidationError);
  });

  test('e-mail addresses are normalised for invitations', () => {
    // Act & Assert
    expect(normalizeEmail('  Ada@Example.COM ')).toBe('ada@example.com');
    expect(normalizeEmail('not-an-address')).toBeUndefined();
  });
});
