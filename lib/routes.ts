/**
 * The registry of every Lambda of the service (`LAMBDAS`): its handler, what it may touch, its timeout
 * and what invokes it (a route, the API's authorizer, a schedule, the table's stream, or the stream and
 * delayed wake-ups for the paced dispatcher). The CDK stack
 * (lib/constructs/), the local stack (local/stack.ts, local/gateway.ts) and the tests are all built from
 * it, so the deployed API and `npm start` run the same handlers on the same triggers. `ROUTES` is the
 * route table: the registry's route entries, in order.
 * Its parts: lib/route-table.ts (the routes), lib/event-lambdas.ts (the authorizer, the sweeper, the
 * workers, the dispatcher), lib/function-needs.ts (what they may touch).
 */

import { AUTHORIZER, DISPATCHER, MEDIA_WORKER, SWEEPER, WEBHOOK_WORKER } from './event-lambdas';
import type { LambdaDefinition, RouteDefinition } from './lambda-definitions';
import { ROUTE_TABLE } from './route-table';

export {
  AUTHORIZER,
  AUTHORIZER_CACHE_TTL_SECONDS,
  AUTHORIZER_IDENTITY_SOURCES,
  DISPATCHER,
  DISPATCHER_FILTER,
  MEDIA_WORKER,
  MEDIA_WORKER_FILTER,
  SWEEPER,
  WEBHOOK_WORKER,
  WEBHOOK_WORKER_FILTERS,
} from './event-lambdas';
export { withInlineKeyReads } from './function-needs';
export type * from './lambda-definitions';

/** The route table: every endpoint and the function behind it, in the order the API documents them. */
export const ROUTES: readonly RouteDefinition[] = ROUTE_TABLE;

/**
 * Every Lambda of the service, once: what builds the stack's functions, the local stack's handlers and
 * the tests' lists. Names are unique (they name the functions' constructs and folders).
 */
export const LAMBDAS: readonly LambdaDefinition[] = [
  AUTHORIZER,
  ...ROUTE_TABLE,
  SWEEPER,
  MEDIA_WORKER,
  WEBHOOK_WORKER,
  DISPATCHER,
];

/** The registry's entries with one trigger, typed by it. */
export function lambdasTriggeredBy<T extends LambdaDefinition['trigger']>(
  trigger: T,
): Extract<LambdaDefinition, { trigger: T }>[] {
  return LAMBDAS.filter(
    (definition): definition is Extract<LambdaDefinition, { trigger: T }> => definition.trigger === trigger,
  );
}
