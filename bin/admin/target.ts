/**
 * Which table the operator CLI talks to: the local stack by default (the same settings as `npm start`),
 * or with `--aws` the deployed table named by `TABLE_NAME` through the normal AWS credential chain.
 */

import { UsageError } from '../../functions/core/errors';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { DEFAULT_TABLE_NAME } from '../../functions/store/table';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { readStackState } from '../../local/stack-state';

const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;
const PORT = /^[1-9][0-9]{0,4}$/;

export interface Target {
  ctx: StoreContext;
  /** For error messages: where the CLI looked. */
  description: string;
  local: boolean;
}

/** DYNAMODB_ENDPOINT, else DynamoDB Local on DYNAMODB_PORT (default 8000), as `npm start` reads them. */
function localEndpoint(env: NodeJS.ProcessEnv): string {
  if (env.DYNAMODB_ENDPOINT) {
    if (!/^https?:\/\/[^\s/]+\/?$/.test(env.DYNAMODB_ENDPOINT)) {
      throw new UsageError(`DYNAMODB_ENDPOINT is not an http(s) origin: ${env.DYNAMODB_ENDPOINT}`);
    }
    return env.DYNAMODB_ENDPOINT;
  }
  // As npm start: DYNAMODB_PORT, else the fourth port from PORT_BASE, else 8000.
  const portText = env.DYNAMODB_PORT || (env.PORT_BASE ? String(Number(env.PORT_BASE) + 3) : '8000');
  const port = PORT.test(portText) ? Number(portText) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) throw new UsageError(`DYNAMODB_PORT is not a port number: ${portText}`);
  return `http://127.0.0.1:${port}`;
}

/** Builds the store context for the invocation; validates the settings first (UsageError). */
export function resolveTarget(aws: boolean, env: NodeJS.ProcessEnv): Target {
  if (aws) {
    const tableName = env.TABLE_NAME;
    if (!tableName) throw new UsageError('--aws needs TABLE_NAME: the name of the deployed table');
    if (!TABLE_NAME.test(tableName)) throw new UsageError(`TABLE_NAME is not a valid table name: ${tableName}`);
    return { ctx: { doc: createDocumentClient(), tableName }, description: `table ${tableName} in AWS`, local: false };
  }
  // The stack `npm start` runs, as it recorded itself, unless the settings say otherwise.
  const running = env.DYNAMODB_PORT || env.DYNAMODB_ENDPOINT ? undefined : readStackState(env.DATA_DIR || '.data');
  const tableName = env.TABLE_NAME || running?.tableName || DEFAULT_TABLE_NAME;
  if (!TABLE_NAME.test(tableName)) throw new UsageError(`TABLE_NAME is not a valid table name: ${tableName}`);
  const endpoint = running?.dynamodbEndpoint ?? localEndpoint(env);
  return {
    // Two attempts: a stopped local stack should fail fast with a clear message, not after backoff.
    ctx: { doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint, maxAttempts: 2 }), tableName },
    description: `table ${tableName} on DynamoDB Local at ${endpoint}`,
    local: true,
  };
}
