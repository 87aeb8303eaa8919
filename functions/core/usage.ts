/**
 * Usage: what an account spent, by day, API key or model (docs/api/spend-limits-and-usage.md#usage, `GET
 * /api/ai/usage`).
 *
 * The figures come from counters, never from reading the ledger or the tasks back: every transaction
 * that moves credits (accept, refund) or ends a task (complete) also adds to a usage counter item of
 * the day, so reading a month costs the same for ten tasks as for a hundred thousand (store/usage.ts).
 * This module is the pure part: the counters' attribute names, the days, the query and the report.
 *
 * What is counted where:
 * - credits on the day they moved, as the ledger dates them: `debited` on the accept's day, `refunded`
 *   on the refund's day (so a range's totals equal the ledger's for the same days);
 * - tasks on the day they were accepted, by their status now: `accepted`, then `completed` or
 *   `failed` (a cancel is a failure); `pending` is what is neither yet.
 */

/** The counters of one day. */
export const USAGE_METRICS = ['debited', 'refunded', 'accepted', 'completed', 'failed'] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];

/** The group of tasks submitted from the dashboard (a session, not an API key). */
export const SESSION_GROUP = 'session';

/** The separator of a group counter's attribute name: `debited|k|<keyId>`, `debited|m|<model>`. */
const SEPARATOR = '|';

/**
 * The attributes one event adds to: the day's total and the key's and model's shares of it. Key ids
 * and model ids are the service's own (no `|` in them), so the names cannot collide.
 */
export function usageAttributes(metric: UsageMetric, keyId: string | undefined, model: string): string[] {
  return [
    metric,
    `${metric}${SEPARATOR}k${SEPARATOR}${keyId ?? SESSION_GROUP}`,
    `${metric}${SEPARATOR}m${SEPARATOR}${model}`,
  ];
}

/** The UTC day of an instant, `YYYY-MM-DD` (ISO strings are UTC, so their first ten characters). */
export function usageDay(at: Date | string): string {
  return (typeof at === 'string' ? at : at.toISOString()).slice(0, 10);
}

export const USAGE_GROUP_BYS = ['day', 'key', 'model'] as const;
export type UsageGroupBy = (typeof USAGE_GROUP_BYS)[number];

/** The longest range one read covers, in days (a leap year). */
export const MAX_USAGE_DAYS = 366;
/** The range when the caller names none: the last 30 days, today included. */
export const DEFAULT_USAGE_DAYS = 30;

/** Task counts by status. */
export interface UsageTasks {
  accepted: number;
  completed: number;
  failed: number;
  pending: number;
}

/** Credits and tasks of a range or of one group in it. */
export interface UsageFigures {
  debited: number;
  refunded: number;
  /** `debited - refunded`: what the account paid. */
  net: number;
  tasks: UsageTasks;
}

/** One row of a report: a day (`YYYY-MM-DD`), a key id (or `session`) or a model id. */
export interface UsageRow extends UsageFigures {
  group: string;
  /** The key's name, for `groupBy=key` rows of keys that still exist. */
  name?: string;
}

export interface UsageReport {
  from: string;
  to: string;
  groupBy: UsageGroupBy;
  totals: UsageFigures;
  rows: UsageRow[];
}

/** A validated usage query. */
export interface UsageQuery {
  from: string;
  to: string;
  groupBy: UsageGroupBy;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function dayMs(day: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  const ms = Date.parse(`${day}T00:00:00.000Z`);
  // Date.parse rolls 2026-02-30 over to March; a real day reads back as itself.
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== day ? undefined : ms;
}

/**
 * Checks `from`, `to` and `groupBy` of a usage read: problems by field (empty when valid), and the query
 * with its defaults (the last 30 days, by day) filled in.
 */
export function parseUsageQuery(
  query: Record<string, string | undefined>,
  now: Date,
): { query: UsageQuery; fieldErrors: Record<string, string[]> } {
  const fieldErrors: Record<string, string[]> = {};
  const dayMessage = 'Must be a day YYYY-MM-DD (UTC)';
  const toMs = query.to === undefined ? dayMs(usageDay(now)) : dayMs(query.to);
  if (toMs === undefined) fieldErrors.to = [dayMessage];
  const fromMs = query.from === undefined ? (toMs ?? 0) - (DEFAULT_USAGE_DAYS - 1) * DAY_MS : dayMs(query.from);
  if (fromMs === undefined) fieldErrors.from = [dayMessage];
  if (fromMs !== undefined && toMs !== undefined && fieldErrors.from === undefined && fieldErrors.to === undefined) {
    if (fromMs > toMs) fieldErrors.from = ['Must not be after to'];
    else if ((toMs - fromMs) / DAY_MS + 1 > MAX_USAGE_DAYS) {
      fieldErrors.from = [`The range may cover at most ${MAX_USAGE_DAYS} days`];
    }
  }
  const groupBy = query.groupBy ?? 'day';
  if (!(USAGE_GROUP_BYS as readonly string[]).includes(groupBy)) {
    fieldErrors.groupBy = [`Must be one of ${USAGE_GROUP_BYS.join(', ')}`];
  }
  return {
    query: {
      from: usageDay(new Date(fromMs ?? 0)),
      to: usageDay(new Date(toMs ?? 0)),
      groupBy: groupBy as UsageGroupBy,
    },
    fieldErrors,
  };
}

/** Every day from `from` to `to`, both included. */
export function daysOf(from: string, to: string): string[] {
  const days: string[] = [];
  const end = dayMs(to) ?? 0;
  for (let ms = dayMs(from) ?? end + 1; ms <= end; ms += DAY_MS) days.push(usageDay(new Date(ms)));
  return days;
}

type Counts = Record<UsageMetric, number>;

const zero = (): Counts => ({ debited: 0, refunded: 0, accepted: 0, completed: 0, failed: 0 });

function figuresOf(counts: Counts): UsageFigures {
  return {
    debited: counts.debited,
    refunded: counts.refunded,
    net: counts.debited - counts.refunded,
    tasks: {
      accepted: counts.accepted,
      completed: counts.completed,
      failed: counts.failed,
      pending: Math.max(0, counts.accepted - counts.completed - counts.failed),
    },
  };
}

/** A counter item as read: its day and its numeric attributes. */
export interface UsageCounterItem {
  day: string;
  counters: Record<string, number>;
}

/**
 * Sums counter items (any number per day: the store shards them) into the report of `query`.
 * `keyNames` names the keys that still exist.
 */
export function usageReport(
  query: UsageQuery,
  items: readonly UsageCounterItem[],
  keyNames: ReadonlyMap<string, string> = new Map(),
): UsageReport {
  const totals = zero();
  const groups = new Map<string, Counts>();
  const add = (group: string, metric: UsageMetric, value: number) => {
    const counts = groups.get(group) ?? zero();
    counts[metric] += value;
    groups.set(group, counts);
  };
  const marker = query.groupBy === 'key' ? 'k' : 'm';
  for (const item of items) {
    if (item.day < query.from || item.day > query.to) continue;
    for (const [name, value] of Object.entries(item.counters)) {
      const [metric, kind, ...rest] = name.split(SEPARATOR);
      if (!(USAGE_METRICS as readonly string[]).includes(metric ?? '')) continue;
      const m = metric as UsageMetric;
      if (kind === undefined) {
        totals[m] += value;
        if (query.groupBy === 'day') add(item.day, m, value);
      } else if (query.groupBy !== 'day' && kind === marker) {
        add(rest.join(SEPARATOR), m, value);
      }
    }
  }
  let rows: UsageRow[];
  if (query.groupBy === 'day') {
    rows = daysOf(query.from, query.to).map((day) => ({ group: day, ...figuresOf(groups.get(day) ?? zero()) }));
  } else {
    rows = [...groups.entries()]
      .map(([group, counts]): UsageRow => {
        const name = query.groupBy === 'key' ? keyNames.get(group) : undefined;
        return { group, ...(name === undefined ? {} : { name }), ...figuresOf(counts) };
      })
      .filter((row) => row.debited !== 0 || row.refunded !== 0 || row.tasks.accepted !== 0)
      .sort((a, b) => b.debited - a.debited || a.group.localeCompare(b.group));
  }
  return { from: query.from, to: query.to, groupBy: query.groupBy, totals: figuresOf(totals), rows };
}
