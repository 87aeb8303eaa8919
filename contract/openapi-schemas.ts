/**
 * The schemas of the OpenAPI document (contract/openapi-document.ts): the request bodies converted from the
 * valibot schemas validation runs, and every response body, with the field notes JSON Schema keywords
 * cannot carry. Each area has its file; this one puts them together in the document's order.
 */
import { accountSchemas } from './openapi-account-schemas';
import { eventFeedSchemas } from './openapi-event-feed';
import type { Json } from './openapi-json';
import { requestSchemas } from './openapi-request-schemas';
import { taskSchemas } from './openapi-task-schemas';

/** The document's `components.schemas`. */
export function schemas(): Json {
  return { ...requestSchemas(), ...taskSchemas(), ...accountSchemas(), ...eventFeedSchemas() };
}
