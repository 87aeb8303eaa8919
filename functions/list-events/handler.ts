/**
 * GET /api/events?after=&types=&limit=: the caller's account events, oldest first, from after the
 * cursor `after` (the `next` of the previous page; none: from the first kept), of `types` only when
 * given (comma-separated), `limit` per page (1-100, default 50). One consistent Query per page, keyed by
 * the caller's own user id: nobody else's events are in the partition read. Key or session.
 */
import { parseFeedQuery } from '../core/event-feed-query';
import { apiHandler } from '../http/api-handler';
import { decodeEventCursor, listFeedEvents } from '../store/event-feed';
import { storeFromEnv } from '../store/from-env';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const query = parseFeedQuery(req.query, decodeEventCursor);
  const page = await listFeedEvents(storeFromEnv(), req.caller.userId, query);
  return { statusCode: 200, body: { events: page.events, next: page.next ?? null, hasMore: page.hasMore } };
});
