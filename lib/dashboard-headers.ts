/**
 * The security headers of the dashboard's pages: one definition for the CloudFront response headers
 * policy (lib/generation-service-stack.ts) and the local gateway (local/gateway.ts), so what the tests
 * see locally is what the distribution sends.
 *
 * Nothing comes from another origin except the results: deployed, signed result URLs point at the
 * media bucket, so images and videos may also load from that one origin, and the new-task form's
 * reference files are POSTed there (the presigned POST of an upload). Previews of chosen files are
 * `blob:` URLs the page makes itself. No inline script or style, no frames either way, no plugins, no
 * `<base>` tricks.
 */

/** The Content-Security-Policy; `mediaOrigins` are the extra origins results load from and uploads go to. */
export function dashboardCsp(mediaOrigins: readonly string[] = []): string {
  const media = ["'self'", ...mediaOrigins].join(' ');
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${media} blob:`,
    `media-src ${media}`,
    `connect-src ${media}`,
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Permissions the dashboard never needs, switched off for the page and anything it could load. */
export const PERMISSIONS_POLICY = 'camera=(), microphone=(), geolocation=(), payment=(), usb=()';

/**
 * Every header of a dashboard file as the local gateway sends it (deployed, CloudFront adds the same
 * and HSTS, which means nothing on plain-HTTP 127.0.0.1).
 */
export function dashboardHeaders(mediaOrigins: readonly string[] = []): Record<string, string> {
  return {
    'Content-Security-Policy': dashboardCsp(mediaOrigins),
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Permissions-Policy': PERMISSIONS_POLICY,
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cache-Control': 'no-cache',
  };
}
