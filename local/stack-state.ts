/**
 * Where a running `npm start` can be found: `<DATA_DIR>/local-stack.json`, written once the stack is
 * ready and removed when it stops. The operator CLI reads it, so `admin` talks to the DynamoDB Local
 * that `npm start` runs whatever ports and table it was given, without repeating the settings. With
 * `DATA_DIR=:memory:` nothing is written (such a stack is for tests, which pass settings explicitly).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface LocalStackState {
  pid: number;
  dynamodbEndpoint: string;
  tableName: string;
  apiUrl: string;
}

function stateFile(dataDir: string): string | undefined {
  return dataDir === ':memory:' ? undefined : join(resolve(dataDir), 'local-stack.json');
}

/** Records the running stack; returns how to remove the record again. */
export function writeStackState(dataDir: string, state: LocalStackState): () => void {
  const file = stateFile(dataDir);
  if (!file) return () => undefined;
  writeFileSync(file, `${JSON.stringify(state, null, 2)}\n`);
  return () => rmSync(file, { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The running stack recorded under `dataDir`, if its process still lives. */
export function readStackState(dataDir: string): LocalStackState | undefined {
  const file = stateFile(dataDir);
  if (!file) return undefined;
  let state: unknown;
  try {
    state = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof state !== 'object' || state === null) return undefined;
  const { pid, dynamodbEndpoint, tableName, apiUrl } = state as Record<string, unknown>;
  if (typeof pid !== 'number' || typeof dynamodbEndpoint !== 'string' || typeof tableName !== 'string')
    return undefined;
  if (!alive(pid)) return undefined;
  return { pid, dynamodbEndpoint, tableName, apiUrl: typeof apiUrl === 'string' ? apiUrl : '' };
}
