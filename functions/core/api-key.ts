/**
 * API key format, hashing and the strict `Authorization: Bearer <key>` parser.
 *
 * A key is `gsk_live_` followed by 43 base64url characters (32 random bytes, 256 bits). The fixed
 * prefix lets secret scanners find leaked keys; only the SHA-256 of a key is ever stored.
 */
import { createHash, randomBytes } from 'node:crypto';

/** Recognisable prefix of every key (secret scanners and humans can spot a leaked key by it). */
export const API_KEY_PREFIX = 'gsk_live_';

/** Random bytes per key: 256 bits, so guessing or hash collisions are out of reach. */
const KEY_RANDOM_BYTES = 32;

/** base64url of 32 bytes without padding is exactly 43 characters. */
const KEY_BODY_LENGTH = 43;

/** Characters of the random body shown in listings: enough to tell keys apart, far too few to guess. */
const DISPLAY_BODY_CHARS = 6;

const KEY_ID_PREFIX = 'key_';
const KEY_ID_LENGTH = 12;
/** Lower-case letters and digits only: key ids are typed by operators and pasted into shells. */
const KEY_ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

const API_KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[A-Za-z0-9_-]{${KEY_BODY_LENGTH}}$`);
const KEY_ID_PATTERN = new RegExp(`^${KEY_ID_PREFIX}[${KEY_ID_ALPHABET}]{${KEY_ID_LENGTH}}$`);

/**
 * A bearer credential: RFC 6750 `b64token` (token68) characters. Capped in length so a hostile header
 * costs nothing to reject; a real key is 52 characters.
 */
const BEARER_PATTERN = /^Bearer ([A-Za-z0-9\-._~+/]{1,256}=*)$/i;

/** A freshly generated key: `apiKey` is shown once and never stored; `keyId` names it everywhere else. */
export interface GeneratedApiKey {
  apiKey: string;
  keyId: string;
}

/** Generates a new key and its public id from the operating system's cryptographic random source. */
export function generateApiKey(): GeneratedApiKey {
  return {
    apiKey: `${API_KEY_PREFIX}${randomBytes(KEY_RANDOM_BYTES).toString('base64url')}`,
    keyId: generateKeyId(),
  };
}

/** `key_` + 12 characters of [a-z0-9] (about 62 bits): unique enough for ids, which are not secrets. */
export function generateKeyId(): string {
  // Rejection sampling keeps every character equally likely (256 is not a multiple of 36).
  const limit = 256 - (256 % KEY_ID_ALPHABET.length);
  let id = '';
  while (id.length < KEY_ID_LENGTH) {
    for (const byte of randomBytes(KEY_ID_LENGTH * 2)) {
      if (byte >= limit || id.length >= KEY_ID_LENGTH) continue;
      id += KEY_ID_ALPHABET[byte % KEY_ID_ALPHABET.length];
    }
  }
  return `${KEY_ID_PREFIX}${id}`;
}

/** Lower-case hex SHA-256 of the key: the only form in which a key is stored or looked up. */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

/** Whether `value` has the exact shape of a key this service issues (no store lookup needed otherwise). */
export function isApiKeyFormat(value: string): boolean {
  return API_KEY_PATTERN.test(value);
}

/** Whether `value` has the shape of a key id (`key_` + 12 of [a-z0-9]). */
export function isKeyIdFormat(value: string): boolean {
  return KEY_ID_PATTERN.test(value);
}

/**
 * The token of an `Authorization` header of exactly `Bearer <token>`: one space, no surrounding or
 * extra whitespace, no second credential. The scheme name is case-insensitive (RFC 7235). Anything else
 * gives `undefined`, which callers answer with 401.
 */
export function parseBearer(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return BEARER_PATTERN.exec(header)?.[1];
}

/** The part of a key that listings show (`gsk_live_AbC123`), never enough to use it. */
export function keyPrefix(apiKey: string): string {
  return apiKey.slice(0, API_KEY_PREFIX.length + DISPLAY_BODY_CHARS);
}

/** Epoch seconds, rounded down: the unit of `expiresAt` / `revokedAt`. */
export function epochSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

/**
 * Whether a key with this `expiresAt` (epoch seconds; undefined = never) is expired at `now`: from the
 * `expiresAt` second on. The authorizer decides with it, and handlers re-check the authorizer context
 * with it so a cached Allow cannot outlive the key.
 */
export function isKeyExpired(expiresAt: number | undefined, now: Date): boolean {
  return expiresAt !== undefined && epochSeconds(now) >= expiresAt;
}
