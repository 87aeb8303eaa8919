/**
 * The query parameters every listing takes: `limit` (1-100, default 50) and `cursor` (the `next` of the
 * previous page). One parser, so every listing refuses the same things with the same messages.
 */
import { ValidationError } from '../core/errors';

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 100;

/** A listing's page request. */
export interface PageQuery {
  limit: number;
  /** The sort key to continue after, decoded from the cursor. */
  afterSortKey?: string;
}

/**
 * Reads `limit` and `cursor`; `decodeCursor` checks the cursor belongs to this listing. Other fields
 * (filters) are checked by the caller, which passes their problems in `fieldErrors` to report at once.
 * @throws ValidationError naming every bad parameter
 */
export function parsePageQuery(
  query: Record<string, string | undefined>,
  decodeCursor: (cursor: string) => string | undefined,
  fieldErrors: Record<string, string[]> = {},
): PageQuery {
  const errors = { ...fieldErrors };
  let limit = DEFAULT_PAGE_LIMIT;
  if (query.limit !== undefined) {
    limit = /^[1-9][0-9]{0,2}$/.test(query.limit) ? Number(query.limit) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_PAGE_LIMIT)) errors.limit = [`Must be a whole number from 1 to ${MAX_PAGE_LIMIT}`];
  }
  let afterSortKey: string | undefined;
  if (query.cursor !== undefined) {
    afterSortKey = decodeCursor(query.cursor);
    if (afterSortKey === undefined) errors.cursor = ['Not a cursor this endpoint returned'];
  }
  if (Object.keys(errors).length > 0) throw new ValidationError({ fieldErrors: errors, formErrors: [] });
  return afterSortKey === undefined ? { limit } : { limit, afterSortKey };
}
