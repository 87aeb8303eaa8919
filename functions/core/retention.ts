/**
 * A task's result retention (`resultRetention` on submit): how long its results are kept, counted from
 * its acceptance, at most the deployment's maximum (the media bucket's expiry, 30 days). After it the
 * sweeper removes them as a delete does, and the Task resource says `resultsExpiredAt`
 * (docs/design/accounts.md#result-retention). Nothing here does I/O.
 */
import * as v from 'valibot';

/** The longest retention a request may ask for: the bucket's expiry of results (RESULT_RETENTION_DAYS' default). */
export const MAX_RESULT_RETENTION_DAYS = 30;

const RETENTION = /^([1-9]\d{0,5})([hd])$/;
const UNIT_SECONDS = { h: 3600, d: 86_400 } as const;

/** Seconds of a retention like `1h`, `12h`, `7d`; undefined when it is not one. */
export function retentionSeconds(value: string): number | undefined {
  const match = RETENTION.exec(value);
  if (!match?.[1] || !match[2]) return undefined;
  return Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS];
}

/** The `resultRetention` field of both submit bodies. */
export const resultRetentionSchema = /* @__PURE__ */ v.pipe(
  v.string('Must be a string'),
  v.check(
    (value) => retentionSeconds(value) !== undefined,
    'Must be a whole number of hours or days, like "1h", "12h", "1d" or "7d"',
  ),
  v.check(
    (value) => (retentionSeconds(value) ?? 0) <= MAX_RESULT_RETENTION_DAYS * 86_400,
    `Must be at most ${MAX_RESULT_RETENTION_DAYS} days ("${MAX_RESULT_RETENTION_DAYS}d"), the deployment's maximum`,
  ),
);

/** When a task's results go, by its own retention (epoch ms), or undefined when it asked for none. */
export function retentionEndsAt(task: { createdAt: string; request: Record<string, unknown> }): number | undefined {
  const seconds = task.request.resultRetentionSeconds;
  if (typeof seconds !== 'number') return undefined;
  const created = Date.parse(task.createdAt);
  return Number.isFinite(created) ? created + seconds * 1000 : undefined;
}
