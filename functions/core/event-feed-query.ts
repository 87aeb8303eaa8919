/**
 * The query of the event feed (GET /api/events): `after` (a cursor the feed returned), `types` (the
 * event types to keep, comma-separated) and `limit`. No I/O here.
 */
import type { AccountEventType } from './account-events';
import { ValidationError } from './errors';
import type { WebhookEventType } from './webhooks';

/** Every event type the feed (and a webhook) carries. */
export const FEED_EVENT_TYPES: readonly WebhookEventType[] = [
  'task.completed',
  'task.failed',
  'key.spend_limit.warning',
  'key.spend_limit.reached',
  'credits.low',
] satisfies readonly (WebhookEventType | AccountEventType)[];

/** Events per page by default, and at most. */
export const DEFAULT_FEED_LIMIT = 50;
export const MAX_FEED_LIMIT = 100;

/** A page request of the feed. */
export interface FeedQuery {
  limit: number;
  afterSortKey?: string;
  types?: WebhookEventType[];
}

/**
 * Reads `after`, `types` and `limit`; `decodeCursor` checks the cursor is one the feed returned.
 * @throws ValidationError naming every bad parameter
 */
export function parseFeedQuery(
  query: Record<string, string | undefined>,
  decodeCursor: (cursor: string) => string | undefined,
): FeedQuery {
  const fieldErrors: Record<string, string[]> = {};
  let limit = DEFAULT_FEED_LIMIT;
  if (query.limit !== undefined) {
    limit = /^[1-9][0-9]{0,2}$/.test(query.limit) ? Number(query.limit) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_FEED_LIMIT))
      fieldErrors.limit = [`Must be a whole number from 1 to ${MAX_FEED_LIMIT}`];
  }
  let afterSortKey: string | undefined;
  if (query.after !== undefined) {
    afterSortKey = decodeCursor(query.after);
    if (afterSortKey === undefined) fieldErrors.after = ['Not a cursor this feed returned'];
  }
  let types: WebhookEventType[] | undefined;
  if (query.types !== undefined) {
    const named = query.types.split(',').map((type) => type.trim());
    const unknown = named.filter((type) => !FEED_EVENT_TYPES.includes(type as WebhookEventType));
    if (unknown.length > 0 || named.length > FEED_EVENT_TYPES.length) {
      fieldErrors.types = [`Must be a comma-separated list of ${FEED_EVENT_TYPES.join(', ')}`];
    } else {
      types = [...new Set(named as WebhookEventType[])];
    }
  }
  if (Object.keys(fieldErrors).length > 0) throw new ValidationError({ fieldErrors, formErrors: [] });
  return { limit, ...(afterSortKey === undefined ? {} : { afterSortKey }), ...(types ? { types } : {}) };
}
