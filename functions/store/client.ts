/**
 * The DynamoDB document client and the context every store operation takes.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** What every store function needs: the client and the table to use. */
export interface StoreContext {
  doc: DynamoDBDocumentClient;
  tableName: string;
}

/** Builds a document client; `endpoint` points it at DynamoDB Local. */
export function createDocumentClient(config: DynamoDBClientConfig = {}): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(new DynamoDBClient(config), {
    // Optional fields are simply left out of items rather than stored as NULL.
    marshallOptions: { removeUndefinedValues: true },
  });
}
