/**
 * Reading the session cookie from a request's headers. Hand-written rather than the `cookie` package:
 * that parser keeps only the first value of a repeated name, and a request carrying two different
 * session cookies must be refused as ambiguous rather than resolved by order.
 */
import { isOpaqueIdFormat, SESSION_COOKIE } from '../core/session';

type HeaderMap = Record<string, string | undefined> | null | undefined;
type MultiHeaderMap = Record<string, string[] | undefined> | null | undefined;

/** Every value of cookie `name` across all `Cookie` headers (names match exactly, as browsers send them). */
export function cookieValues(headers: HeaderMap, multiValueHeaders: MultiHeaderMap, name: string): string[] {
  const lines = new Set<string>();
  for (const [header, list] of Object.entries(multiValueHeaders ?? {})) {
    if (header.toLowerCase() === 'cookie') for (const line of list ?? []) lines.add(line);
  }
  for (const [header, line] of Object.entries(headers ?? {})) {
    if (header.toLowerCase() === 'cookie' && line !== undefined) lines.add(line);
  }
  const values = new Set<string>();
  for (const line of lines) {
    for (const pair of line.split(';')) {
      const at = pair.indexOf('=');
      if (at < 0) continue;
      if (pair.slice(0, at).trim() === name) values.add(pair.slice(at + 1).trim());
    }
  }
  return [...values];
}

/**
 * The session id of a request: `undefined` when there is no session cookie, `null` when it is
 * malformed or ambiguous (several different values), else the id.
 */
export function sessionIdFromHeaders(
  headers: HeaderMap,
  multiValueHeaders?: MultiHeaderMap,
): string | undefined | null {
  const values = cookieValues(headers, multiValueHeaders, SESSION_COOKIE);
  if (values.length === 0) return undefined;
  const [value] = values;
  if (values.length > 1 || value === undefined || !isOpaqueIdFormat(value)) return null;
  return value;
}
