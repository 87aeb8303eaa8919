/**
 * How context values are checked (lib/config.ts): the string, boolean and integer readers, the list
 * checks, and the error they throw. Values given with `-c` arrive as strings, so numbers and booleans
 * are parsed here.
 */
import { LOG_LEVELS, type ServiceConfig } from './config-keys';

/** Thrown when a context value is missing its expected type or range. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** The shipped placeholder (a `.invalid` host, RFC 2606): a deployment with it would refund every task. */
export function isPlaceholderUrl(url: string): boolean {
  try {
    return new URL(url).hostname.endsWith('.invalid');
  } catch {
    return false;
  }
}

const HOST_RULE = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A comma-separated list of https origins, trimmed; refuses anything else. */
export function originList(value: string): string {
  const origins = value
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '');
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (parsed?.protocol !== 'https:' || parsed.origin !== origin) {
      throw new ConfigError(`uploadCorsOrigins: "${origin}" is not an https origin (https://host[:port], no path)`);
    }
  }
  return origins.join(',');
}

/** A comma-separated list of host names or `*.domain` rules, lowercased; refuses anything else. */
export function hostList(value: string): string {
  const hosts = value
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter((host) => host.length > 0);
  for (const host of hosts) {
    if (!HOST_RULE.test(host)) {
      throw new ConfigError(`mediaSourceHosts: "${host}" is not a host name or *.domain`);
    }
  }
  return hosts.join(',');
}

/** One of `LOG_LEVELS`. */
export function isLogLevel(value: string): value is ServiceConfig['logLevel'] {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/** A string key: trimmed, the fallback when unset; empty only when `allowEmpty`. */
export function str(value: unknown, key: string, fallback: string, allowEmpty = false): string {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string') throw new ConfigError(`${key} must be a string`);
  const trimmed = value.trim();
  if (trimmed === '' && !allowEmpty) throw new ConfigError(`${key} must not be empty`);
  return trimmed;
}

/** A boolean key: `true`/`false` or their text; the fallback when unset. */
export function bool(value: unknown, key: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'boolean') return value;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new ConfigError(`${key} must be true or false`);
}

/** An integer key from `min` to `max` (text parsed); the fallback when unset. */
export function int(value: unknown, key: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === null) return fallback;
  const parsed = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof parsed !== 'number' || !Number.isInteger(parsed) || parsed < min || parsed > max) {
    throw new ConfigError(`${key} must be an integer from ${min} to ${max}`);
  }
  return parsed;
}
