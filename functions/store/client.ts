/**
 * The DynamoDB document client and the context every store operation takes.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** What every store function needs: the client and the table to use. */
export interface StoreContext {
  doc: DynamoDBDocumentClient;
  tableName: string;
  /** With an upstreams list: whose capacity item the dispatcher's writes go to (store/dispatch-capacity.ts). */
  upstream?: string | undefined;
}

/** Builds a document client; `endpoint` points it at DynamoDB Local. */
export function createDocumentClient(config: DynamoDBClientConfig = {}): DynamoDBDocumentClient {
  // Bounded waits: an unreachable table must turn into a clean 5xx well inside API Gateway's 29 s,
  // never a hung request. DynamoDB answers in milliseconds, so these leave ample room.
  const client = new DynamoDBClient({
    requestHandler: {
      connectionTimeout: 2_000,
      requestTimeout: 5_000,
      // Only plain-HTTP endpoints (DynamoDB Local) use this agent. The local stack serves many requests
      // from one process, and waiting for one of the default 50 sockets counts against the timeout.
      httpAgent: { keepAlive: true, maxSockets: 256 },
    },
    ...config,
  });
  return DynamoDBDocumentClient.from(client, {
    // Optional fields are simply left out of items rather than stored as NULL.
    marshallOptions: { removeUndefinedValues: true },
  });
}
