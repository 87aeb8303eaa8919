/**
 * Which table the operator CLI talks to: the local stack by default (the same settings as `npm start`),
 * or with `--aws` the deployed table named by `TABLE_NAME` through the normal AWS credential chain.
 */

import { UsageError } from '../../functions/core/errors';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { DEFAULT_TABLE_NAME } from '../../functions/store/table';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { IN_MEMORY, type LocalStackState, readStackState, runDirectory } from '../../local/stack-state';

const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;
const PORT = /^[1-9][0-9]{0,4}$/;

export interface Target {
  ctx: StoreContext;
  /** For error messages: where the CLI looked. */
  description: string;
  local: boolean;
  /** The running `npm start` the CLI follows, and the data directory it was started with. */
  running?: { state: LocalStackState; dataDir: string };
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

/** The API port `npm start` uses with these settings: PORT, else PORT_BASE, else 3000. */
export function localApiPort(env: NodeJS.ProcessEnv): number {
  const portText = env.PORT || env.PORT_BASE || '3000';
  const port = PORT.test(portText) ? Number(portText) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) throw new UsageError(`PORT is not a port number: ${portText}`);
  return port;
}

/**
 * The recorded stack on these settings: with a data directory, its record there; with
 * `DATA_DIR=:memory:`, the record of the in-memory start on this API port (an error when there is none:
 * an in-memory stack exists only while it runs). With DATA_DIR unset, a running `.data` start wins, else
 * an in-memory start on the port.
 */
function recordedStack(env: NodeJS.ProcessEnv, port: number): Target['running'] {
  if (env.DATA_DIR === IN_MEMORY) {
    const state = readStackState(IN_MEMORY, port, env);
    if (!state) {
      throw new UsageError(
        `no in-memory local stack (DATA_DIR=:memory:) is running on port ${port}: it keeps nothing once stopped. ` +
          `Start it (DATA_DIR=:memory: npm start), or give the CLI the PORT or PORT_BASE it was started with ` +
          `(its record is looked for in ${runDirectory(env)})`,
      );
    }
    return { state, dataDir: IN_MEMORY };
  }
  const dataDir = env.DATA_DIR || '.data';
  const kept = readStackState(dataDir, port, env);
  if (kept) return { state: kept, dataDir };
  const inMemory = env.DATA_DIR ? undefined : readStackState(IN_MEMORY, port, env);
  return inMemory ? { state: inMemory, dataDir: IN_MEMORY } : undefined;
}

/** The API port of a recorded start (from its `apiUrl`), if it says. */
function recordedApiPort(state: LocalStackState): number | undefined {
  try {
    const url = new URL(state.apiUrl);
    return url.port === '' ? undefined : Number(url.port);
  } catch {
    return undefined;
  }
}

/** An origin as the CLI compares it: no trailing slash. */
function origin(endpoint: string): string {
  return endpoint.replace(/\/+$/, '');
}

/**
 * The running stack the CLI follows.
 *
 * An explicit `DYNAMODB_PORT` or `DYNAMODB_ENDPOINT` does not hide a start on the API port (PORT /
 * PORT_BASE): an in-memory start's webhook secrets key and default key plan exist only in its record,
 * so an operator who repeats the start's DynamoDB setting (as in the shell that ran `npm start`) must
 * still reach them. When the explicit setting names another DynamoDB than that start's, the CLI refuses
 * (exit 2) rather than guess: following the start would ignore what the operator typed, following the
 * setting would pair that start's keys and plan with a database they do not belong to. Give the PORT
 * of another start, or unset the DynamoDB setting, to say which one is meant. A data-directory record
 * is followed with an explicit DynamoDB setting only when it is of a start on the API port.
 */
function runningStack(env: NodeJS.ProcessEnv): Target['running'] {
  const port = localApiPort(env);
  const running = recordedStack(env, port);
  if (!env.DYNAMODB_PORT && !env.DYNAMODB_ENDPOINT) return running;
  if (!running || recordedApiPort(running.state) !== port) return undefined;
  const explicit = origin(localEndpoint(env));
  const { dynamodbEndpoint, dynamodbLocalEndpoint } = running.state;
  const recorded = [dynamodbEndpoint, ...(dynamodbLocalEndpoint ? [dynamodbLocalEndpoint] : [])].map(origin);
  if (!recorded.includes(explicit)) {
    const setting = env.DYNAMODB_ENDPOINT
      ? `DYNAMODB_ENDPOINT=${env.DYNAMODB_ENDPOINT}`
      : `DYNAMODB_PORT=${env.DYNAMODB_PORT}`;
    throw new UsageError(
      `${setting} is not the DynamoDB of the local stack running on port ${port} (${running.state.apiUrl}), ` +
        `which uses ${origin(dynamodbEndpoint)}` +
        `${dynamodbLocalEndpoint ? ` (the conflict layer, in front of DynamoDB Local at ${origin(dynamodbLocalEndpoint)})` : ''}. ` +
        `Unset ${env.DYNAMODB_ENDPOINT ? 'DYNAMODB_ENDPOINT' : 'DYNAMODB_PORT'} to follow that stack, ` +
        `or give the PORT (or PORT_BASE) of the one you mean`,
    );
  }
  return running;
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
  const running = runningStack(env);
  const tableName = env.TABLE_NAME || running?.state.tableName || DEFAULT_TABLE_NAME;
  if (!TABLE_NAME.test(tableName)) throw new UsageError(`TABLE_NAME is not a valid table name: ${tableName}`);
  const endpoint = running?.state.dynamodbEndpoint ?? localEndpoint(env);
  return {
    // Two attempts: a stopped local stack should fail fast with a clear message, not after backoff.
    ctx: { doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint, maxAttempts: 2 }), tableName },
    description: `table ${tableName} on DynamoDB Local at ${endpoint}`,
    local: true,
    ...(running ? { running } : {}),
  };
}
