/**
 * The upstream's `Retry-After` (RFC 9110 10.2.3: delta-seconds or an HTTP date), read and bounded.
 *
 * The header is untrusted: a maintenance page or a CDN in front of the upstream may ask for an hour or
 * a day, and every send of the service (or of one model) would then wait that long while submits keep
 * debiting and the sweeper later fails the tasks as TIMEOUT. So the dispatcher honours it only up to a
 * bound (`PROVIDER_MAX_RETRY_AFTER_SECONDS`, default {@link DEFAULT_MAX_RETRY_AFTER_SECONDS}) and logs
 * a longer one (docs/design/dispatching.md).
 */

/** The default bound on an upstream's `Retry-After`: longer than any window a documented upstream uses. */
export const DEFAULT_MAX_RETRY_AFTER_SECONDS = 60;

/** The widest bound the setting takes: a day, beyond which no wait is a backoff any more. */
export const MAX_RETRY_AFTER_SECONDS_LIMIT = 86_400;

/**
 * Reads a `Retry-After` header: whole seconds, or an HTTP date (seconds from `nowMs` to it, rounded
 * up). A date in the past is 0.
 * @returns the seconds asked for, undefined when the header is absent or unreadable
 */
export function parseRetryAfter(header: string | null | undefined, nowMs: number): number | undefined {
  if (header === null || header === undefined) return undefined;
  const trimmed = header.trim();
  if (trimmed === '') return undefined;
  if (/^\d+$/.test(trimmed)) {
    const seconds = Number(trimmed);
    // Digits beyond a safe integer are still "very long": the bound cuts them anyway.
    return Number.isSafeInteger(seconds) ? seconds : Number.MAX_SAFE_INTEGER;
  }
  // Only a date-shaped text (a weekday or digits and a month name), not any string Date.parse accepts.
  if (!/[a-z]{3}/i.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  if (!Number.isFinite(at)) return undefined;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** A `Retry-After` once bounded. */
export interface BoundedRetryAfter {
  /** The seconds to wait: the asked ones, at most the bound. */
  seconds: number;
  /** The asked seconds were longer than the bound and were cut to it (the caller logs it). */
  cut: boolean;
}

/**
 * Honours `askedSeconds` up to `maxSeconds`.
 * @returns the wait, and whether it was cut
 */
export function boundRetryAfter(askedSeconds: number, maxSeconds: number): BoundedRetryAfter {
  const asked = Math.max(0, askedSeconds);
  return asked > maxSeconds ? { seconds: maxSeconds, cut: true } : { seconds: asked, cut: false };
}
