/**
 * Counts the DynamoDB requests a client sends, by command name, to assert how many requests an
 * operation costs. It sits in the deserialize step, inside the SDK's retry loop, so every HTTP
 * attempt counts.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface RequestCounter {
  /** Requests per command name since the last reset, e.g. `{ TransactWriteItemsCommand: 1 }`. */
  readonly counts: Record<string, number>;
  total(): number;
  reset(): void;
  detach(): void;
}

let sequence = 0;

/** A document client shares its DynamoDBClient's stack, so either can be given. */
export function attachRequestCounter(client: DynamoDBClient | DynamoDBDocumentClient): RequestCounter {
  const stack = client.middlewareStack as DynamoDBClient['middlewareStack'];
  const name = `requestCounter${++sequence}`;
  let counts: Record<string, number> = {};
  stack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      counts[command] = (counts[command] ?? 0) + 1;
      return next(args);
    },
    { step: 'deserialize', name, priority: 'low' },
  );
  return {
    get counts() {
      return { ...counts };
    },
    total: () => Object.values(counts).reduce((sum, n) => sum + n, 0),
    reset() {
      counts = {};
    },
    detach() {
      stack.remove(name);
    },
  };
}
