/**
 * Waiting for a task's end inside one request (`GET /api/ai/tasks/{id}?wait=N`, `Prefer: wait=N` on a
 * submit): the bounds and the parsing of both forms. Plain data, no I/O.
 */
import { ValidationError } from './errors';

/** The longest wait a request may ask for, in seconds: well inside API Gateway's 29 s integration timeout. */
export const MAX_WAIT_SECONDS = 20;

/**
 * How often a waiting request reads the task's record: 2 reads a second (one strongly consistent
 * GetItem each, the task's item size in read units), so a task that ends is answered within half a
 * second plus one read, and a 20 s wait costs at most 41 reads.
 */
export const WAIT_READ_INTERVAL_MS = 500;

/**
 * What a waiting request keeps of its function's time for the rest of its work (presenting the task,
 * signing URLs): the wait ends this long before the function's timeout whatever N was asked.
 */
export const WAIT_TIME_RESERVE_MS = 4_000;

const WHOLE_SECONDS = /^[0-9]{1,3}$/;

/**
 * The `wait` query parameter of a task read: absent, or a whole number of seconds from 1 to
 * {@link MAX_WAIT_SECONDS}.
 * @throws ValidationError naming `query.wait` for anything else
 */
export function parseWaitQuery(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = WHOLE_SECONDS.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_WAIT_SECONDS) {
    throw new ValidationError({
      fieldErrors: { 'query.wait': [`Must be a whole number of seconds from 1 to ${MAX_WAIT_SECONDS}`] },
      formErrors: [],
    });
  }
  return seconds;
}

/**
 * The `wait` preference of a `Prefer` header (RFC 7240: `Prefer: wait=10`, possibly among other
 * preferences, `respond-async, wait=10`). Preferences other than `wait` are ignored, as the RFC asks;
 * a wait above {@link MAX_WAIT_SECONDS} is honoured as that maximum (a preference is a hint the server
 * may apply in part, and `Preference-Applied` says what was applied); `wait=0` means no wait.
 * @returns the seconds to wait, or undefined when no wait is preferred
 * @throws ValidationError naming `headers.Prefer` when `wait` is not a whole number of seconds: a
 *   caller who asked for a wait and would silently get a 202 is better told
 */
export function parsePreferWait(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(',')) {
    const [name, ...rest] = part.split('=');
    if (name?.trim().toLowerCase() !== 'wait') continue;
    const raw =
      rest
        .join('=')
        .split(';')[0]
        ?.trim()
        .replace(/^"(.*)"$/, '$1') ?? '';
    if (!/^[0-9]{1,9}$/.test(raw)) {
      throw new ValidationError({
        fieldErrors: { 'headers.Prefer': ['wait must be a whole number of seconds, e.g. Prefer: wait=10'] },
        formErrors: [],
      });
    }
    const seconds = Math.min(Number(raw), MAX_WAIT_SECONDS);
    return seconds > 0 ? seconds : undefined;
  }
  return undefined;
}
