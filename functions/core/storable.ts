/**
 * What a task item can hold. The request is stored with the task, and DynamoDB refuses numbers it
 * cannot represent and empty map keys with an error (a 500 for the caller); the document client also
 * refuses integers it cannot convert exactly. These checks turn each of those into the caller's 400.
 *
 * JSON numbers arrive already parsed: `1e400` is `Infinity`, and a 40-digit integer has lost its
 * digits beyond 2^53, so such a value cannot be stored as the caller sent it in any case.
 */

/** Smallest non-zero magnitude DynamoDB stores (its numbers span 1e-130 to 9.99...e125). */
const SMALLEST_MAGNITUDE = 1e-130;

/** The message for a number that fails {@link isStorableNumber}. */
export const STORABLE_NUMBER_MESSAGE =
  'Must be a number that can be stored exactly: finite, integers within ±9007199254740991, fractions 0 or at least 1e-130 in magnitude';

/**
 * A number DynamoDB (through the document client) stores exactly: finite; an integer within the safe
 * range (larger ones have already lost precision, and the client refuses them); a fraction that is 0 or
 * at least 1e-130 in magnitude (fractions are below 2^53, so never too large).
 */
export function isStorableNumber(value: number): boolean {
  if (!Number.isFinite(value)) return false;
  if (Number.isInteger(value)) return Number.isSafeInteger(value);
  return Math.abs(value) >= SMALLEST_MAGNITUDE;
}

/** Deeper values are refused by the depth rule of `providerInput`; the walk does not follow them. */
const MAX_WALK_DEPTH = 17;

/**
 * Every value below `value` that a task item could not hold: unstorable numbers and empty keys, as
 * `[dotted path, message]` pairs (paths start with `path`).
 */
export function storageProblems(value: unknown, path: string, depth = 0): [string, string][] {
  if (typeof value === 'number') return isStorableNumber(value) ? [] : [[path, STORABLE_NUMBER_MESSAGE]];
  if (typeof value !== 'object' || value === null || depth > MAX_WALK_DEPTH) return [];
  const problems: [string, string][] = [];
  for (const [key, child] of Object.entries(value)) {
    if (key === '' && !Array.isArray(value)) problems.push([`${path}.`, 'Keys must not be empty']);
    problems.push(...storageProblems(child, `${path}.${key}`, depth + 1));
  }
  return problems;
}
