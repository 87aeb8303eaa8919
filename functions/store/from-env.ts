/**
 * The store context a Lambda builds from its environment, once per container.
 */
import { createDocumentClient, type StoreContext } from './client';
import { DEFAULT_TABLE_NAME } from './table';

let cached: StoreContext | undefined;

/**
 * `TABLE_NAME` names the table; `DYNAMODB_ENDPOINT` (local stack, LocalStack) overrides the AWS
 * endpoint. Created lazily so importing a handler costs nothing until the first invocation.
 */
export function storeFromEnv(env: NodeJS.ProcessEnv = process.env): StoreContext {
  if (cached) return cached;
  const endpoint = env.DYNAMODB_ENDPOINT;
  cached = {
    tableName: env.TABLE_NAME ?? DEFAULT_TABLE_NAME,
    doc: createDocumentClient(endpoint ? { endpoint, region: env.AWS_REGION ?? 'local' } : {}),
  };
  return cached;
}

/** Tests and the local stack point the process at another table or endpoint. */
export function resetStoreFromEnv(): void {
  cached = undefined;
}
