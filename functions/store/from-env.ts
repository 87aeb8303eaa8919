/**
 * The store context a Lambda builds from its environment, once per container.
 */
import { AWS_REGION, DYNAMODB_ENDPOINT, type Env, readEnv, TABLE_NAME } from '../environment/environment';
import { createDocumentClient, type StoreContext } from './client';
import { DEFAULT_TABLE_NAME } from './table';

let cached: StoreContext | undefined;

/**
 * `TABLE_NAME` names the table; `DYNAMODB_ENDPOINT` (local stack, LocalStack) overrides the AWS
 * endpoint. Created lazily so importing a handler costs nothing until the first invocation.
 */
export function storeFromEnv(env?: Env): StoreContext {
  if (cached) return cached;
  const endpoint = readEnv(DYNAMODB_ENDPOINT, env);
  cached = {
    tableName: readEnv(TABLE_NAME, env) ?? DEFAULT_TABLE_NAME,
    doc: createDocumentClient(endpoint ? { endpoint, region: readEnv(AWS_REGION, env) ?? 'local' } : {}),
  };
  return cached;
}

/** Tests and the local stack point the process at another table or endpoint. */
export function resetStoreFromEnv(): void {
  cached = undefined;
}
