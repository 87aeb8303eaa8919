/**
 * Named condition fragments and a small expression builder. Every attribute goes through an
 * `ExpressionAttributeNames` placeholder (`#status`, `#ttl`, ... are reserved words), and each fragment
 * owns distinct value placeholders, so fragments combine without clashes.
 */
import { TABLE } from './table';

/** A piece of a DynamoDB expression with the placeholders it uses. */
export interface Expr {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/** The placeholder of an attribute name. Our attribute names are alphanumeric, so it is `#<name>`. */
export function attr(name: string): string {
  return `#${name}`;
}

/** The `ExpressionAttributeNames` entries of `attributes`. */
export function namesOf(...attributes: string[]): Record<string, string> {
  return Object.fromEntries(attributes.map((name) => [attr(name), name]));
}

/** Both conditions must hold. */
export function and(...parts: Expr[]): Expr {
  const merged = mergePlaceholders(parts);
  return { ...merged, expression: parts.map((part) => `(${part.expression})`).join(' AND ') };
}

/**
 * The conditions of refreshing a pending task (claims, callbacks, results ready): an object of their
 * own, like `deliveryConditions`, so the submit functions, which never refresh, do not carry them
 * (measured: with webhooks, submit-image needed the room to stay within its bundle budget).
 */
export const refreshConditions = {
  /** Nobody claimed a provider query since `checkedBeforeMs` (epoch ms), or nobody ever did. */
  checkIntervalElapsed: (checkedBeforeMs: number): Expr => ({
    expression: `attribute_not_exists(${attr('lastCheckedAt')}) OR ${attr('lastCheckedAt')} <= :checkedBefore`,
    names: namesOf('lastCheckedAt'),
    values: { ':checkedBefore': checkedBeforeMs },
  }),

  /** No callback claimed a provider read since `readBeforeMs` (epoch ms), or none ever did. */
  callbackReadIntervalElapsed: (readBeforeMs: number): Expr => ({
    expression: `attribute_not_exists(${attr('lastCallbackReadAt')}) OR ${attr('lastCallbackReadAt')} <= :callbackReadBefore`,
    names: namesOf('lastCallbackReadAt'),
    values: { ':callbackReadBefore': readBeforeMs },
  }),

  /** The provider accepted the task (there is something to read). */
  providerTaskRecorded: (): Expr => ({
    expression: `attribute_exists(${attr('providerTaskId')})`,
    names: namesOf('providerTaskId'),
    values: {},
  }),

  /** The task's results have not been recorded as ready to copy yet. */
  resultsNotYetReady: (): Expr => ({
    expression: `attribute_not_exists(${attr('resultsToCopy')})`,
    names: namesOf('resultsToCopy'),
    values: {},
  }),
} as const;

/**
 * The conditions of an account's active-key count (`USER#<id>` / `KEYCOUNT`, see store/key-count.ts):
 * an object of their own, for the reason given at `webhookKeys`.
 */
export const keyCountConditions = {
  /** The count is set up (every older key counted) and below `limit`: one more key may be issued. */
  roomFor: (limit: number): Expr => ({
    expression: `attribute_exists(${attr('initialized')}) AND ${attr('activeKeys')} < :keyLimit`,
    names: namesOf('initialized', 'activeKeys'),
    values: { ':keyLimit': limit },
  }),

  /** The key's listing says it is in the count (so ending it takes one off). */
  counted: (): Expr => ({
    expression: `attribute_exists(${attr('counted')})`,
    names: namesOf('counted'),
    values: {},
  }),

  /** The key's listing says it is not in the count. */
  notCounted: (): Expr => ({
    expression: `attribute_not_exists(${attr('counted')})`,
    names: namesOf('counted'),
    values: {},
  }),

  /** The key has not been revoked. */
  notRevoked: (): Expr => ({
    expression: `attribute_not_exists(${attr('revokedAt')})`,
    names: namesOf('revokedAt'),
    values: {},
  }),

  /** The key has neither been revoked nor reached its expiry by `nowSeconds`. */
  keyActiveAt: (nowSeconds: number): Expr => ({
    expression: `attribute_not_exists(${attr('revokedAt')}) AND (attribute_not_exists(${attr('expiresAt')}) OR ${attr('expiresAt')} > :activeAt)`,
    names: namesOf('revokedAt', 'expiresAt'),
    values: { ':activeAt': nowSeconds },
  }),

  /** The key has ended by `nowSeconds`: revoked, or its expiry has passed. */
  keyEndedBy: (nowSeconds: number): Expr => ({
    expression: `attribute_exists(${attr('revokedAt')}) OR ${attr('expiresAt')} <= :endedBy`,
    names: namesOf('revokedAt', 'expiresAt'),
    values: { ':endedBy': nowSeconds },
  }),
} as const;

/** The webhook deliveries' conditions (an object of their own, for the reason given at `webhookKeys`). */
export const deliveryConditions = {
  /** The webhook delivery's attempt is claimed by `claimId` (a stale worker's record is refused). */
  claimedBy: (claimId: string): Expr => ({
    expression: `${attr('deliveryState')} = :sendingState AND ${attr('claimId')} = :claimId`,
    names: namesOf('deliveryState', 'claimId'),
    values: { ':sendingState': 'sending', ':claimId': claimId },
  }),

  /** The account has fewer than `limit` open deliveries (a missing counter is none). */
  openBelow: (limit: number): Expr => ({
    expression: `attribute_not_exists(${attr('openDeliveries')}) OR ${attr('openDeliveries')} < :openLimit`,
    names: namesOf('openDeliveries'),
    values: { ':openLimit': limit },
  }),

  /** The delivery still sits in the due index where the sweeper found it (nobody claimed it since). */
  dueAt: (dueKey: string): Expr => ({
    expression: `${attr(TABLE.pendingIndex.sortKey)} = :dueKey`,
    names: namesOf(TABLE.pendingIndex.sortKey),
    values: { ':dueKey': dueKey },
  }),
} as const;

/**
 * The prefix of the key-end markers that revocations wrote onto the balance shards before the key-end
 * guards had items of their own. Nothing reads them any more; `markKeyEnd` removes what it finds.
 */
export const LEGACY_KEY_END_PREFIX = 'keyEnd_';

/** What an update changes: `SET` values, `ADD` numbers, `REMOVE` attributes. */
export interface UpdateSpec {
  set?: Record<string, unknown>;
  /** Set only when the attribute is missing (`if_not_exists`), e.g. `createdAt` of an upserted item. */
  setIfMissing?: Record<string, unknown>;
  add?: Record<string, number>;
  remove?: string[];
}

/** Builds an `UpdateExpression` whose value placeholders (`:set<Name>`, ...) cannot clash with conditions. */
export function update(spec: UpdateSpec): Expr {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  for (const [name, value] of Object.entries(spec.set ?? {})) {
    names[attr(name)] = name;
    values[`:set${name}`] = value;
    sets.push(`${attr(name)} = :set${name}`);
  }
  for (const [name, value] of Object.entries(spec.setIfMissing ?? {})) {
    names[attr(name)] = name;
    values[`:init${name}`] = value;
    sets.push(`${attr(name)} = if_not_exists(${attr(name)}, :init${name})`);
  }
  const adds: string[] = [];
  for (const [name, value] of Object.entries(spec.add ?? {})) {
    names[attr(name)] = name;
    values[`:add${name}`] = value;
    adds.push(`${attr(name)} :add${name}`);
  }
  const removes = (spec.remove ?? []).map((name) => {
    names[attr(name)] = name;
    return attr(name);
  });
  const clauses = [
    sets.length ? `SET ${sets.join(', ')}` : '',
    adds.length ? `ADD ${adds.join(', ')}` : '',
    removes.length ? `REMOVE ${removes.join(', ')}` : '',
  ].filter(Boolean);
  return { expression: clauses.join(' '), names, values };
}

/** Placeholder maps of a request; `ExpressionAttributeValues` is left out when empty (DynamoDB rejects `{}`). */
export interface PlaceholderParams {
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

/** Request fields of an update, optionally conditional, with all placeholders merged. */
export function updateParams(
  change: Expr,
  condition?: Expr,
): PlaceholderParams & { UpdateExpression: string; ConditionExpression?: string } {
  return {
    UpdateExpression: change.expression,
    ...(condition ? { ConditionExpression: condition.expression } : {}),
    ...placeholderParams(condition ? [change, condition] : [change]),
  };
}

/** Request fields of a conditional put. */
export function conditionParams(condition: Expr): PlaceholderParams & { ConditionExpression: string } {
  return { ConditionExpression: condition.expression, ...placeholderParams([condition]) };
}

/**
 * A request whose update is written out (with its own placeholders) and whose condition is a named one:
 * the condition's expression, and its placeholders merged into the request's.
 */
export function withCondition<
  P extends { ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, unknown> },
>(params: P, condition: Expr): P & PlaceholderParams & { ConditionExpression: string } {
  const own: Expr = {
    expression: '',
    names: params.ExpressionAttributeNames ?? {},
    values: params.ExpressionAttributeValues ?? {},
  };
  return { ...params, ConditionExpression: condition.expression, ...placeholderParams([own, condition]) };
}

/**
 * A query whose key condition is named: the partition's fragment and, optionally, the sort key's
 * (condition-fragments.ts `partitionIs`, `sortKeyBeginsWith`, ...), their placeholders merged into the
 * request's own (a filter's, a projection's). Joined without parentheses: a key condition is the
 * partition's equality and at most one sort key condition, nothing more.
 */
export function withKeyCondition<
  P extends { ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, unknown> },
>(params: P, partition: Expr, sort?: Expr): P & PlaceholderParams & { KeyConditionExpression: string } {
  const own: Expr = {
    expression: '',
    names: params.ExpressionAttributeNames ?? {},
    values: params.ExpressionAttributeValues ?? {},
  };
  const parts = sort ? [own, partition, sort] : [own, partition];
  const expression = sort ? `${partition.expression} AND ${sort.expression}` : partition.expression;
  return { ...params, KeyConditionExpression: expression, ...placeholderParams(parts) };
}

function placeholderParams(parts: Expr[]): PlaceholderParams {
  const { names, values } = mergePlaceholders(parts);
  return {
    ExpressionAttributeNames: names,
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
}

function mergePlaceholders(parts: Expr[]): Pick<Expr, 'names' | 'values'> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  for (const part of parts) {
    Object.assign(names, part.names);
    for (const [placeholder, value] of Object.entries(part.values)) {
      if (placeholder in values && values[placeholder] !== value) {
        // A silent overwrite would change what one fragment tests; fail loudly instead.
        throw new Error(`Expression placeholder ${placeholder} used with two values`);
      }
      values[placeholder] = value;
    }
  }
  return { names, values };
}
