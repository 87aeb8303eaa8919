/**
 * Wakes the local stack's loops (the stream pollers, the dispatcher, the sweeper's timer) when its own
 * handlers write. Deployed, a write wakes what it concerns (its stream record, a queue message); locally
 * the loops look instead and back off while idle (local/idle-backoff.ts), and the gateway's requests
 * wake them. A write that follows no request (a sweep ending a task, a stream worker recording a failed
 * webhook delivery, the dispatcher sending a task) would otherwise wait out an idle pause before the
 * loops see its records: with this, the stack being one process, it is seen within their base pause,
 * so the idle pauses can be long.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** The commands that change the table (the document client's commands carry the table API's names). */
const WRITES =
  /^(PutItem|UpdateItem|DeleteItem|BatchWriteItem|TransactWriteItems|ExecuteStatement|BatchExecuteStatement|ExecuteTransaction)Command$/;

/** Calls `wake` after every write the client makes (answered or failed: a failure may have written). */
export function nudgeOnWrites(client: DynamoDBDocumentClient, wake: () => void): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!WRITES.test(context.commandName ?? '')) return next(args);
      try {
        return await next(args);
      } finally {
        wake();
      }
    },
    { step: 'initialize', name: 'localStackNudgeOnWrites', priority: 'low' },
  );
}
