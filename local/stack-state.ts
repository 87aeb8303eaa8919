/**
 * Where a running `npm start` can be found, so the operator CLI talks to the DynamoDB Local it runs
 * (whatever ports and table it was given) without repeating the settings:
 *
 * - with a data directory: `<DATA_DIR>/local-stack.json`, next to the files the start keeps there
 *   (the webhook secrets key among them);
 * - with `DATA_DIR=:memory:`, which keeps nothing on disk for the data itself: a per-run record in the
 *   user's run directory (`$XDG_RUNTIME_DIR/generation-service/`, else `<tmp>/generation-service-<uid>/`,
 *   owner-only), named by the API port (`in-memory-<PORT>.json`). It also carries the run's generated
 *   webhook secrets key, which exists nowhere else, so `webhooks secret` can seal with it.
 *
 * Both are written once the stack is ready (readable by the owner only) and removed when it stops; a
 * record whose process is gone is ignored.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type RatePlan, ratePlanProblems } from '../functions/core/rate-plan';
import { processAlive as alive } from './owner-watch';

export const IN_MEMORY = ':memory:';

export interface LocalStackState {
  pid: number;
  /** Where the stack's handlers reach DynamoDB (the conflict layer, when on). */
  dynamodbEndpoint: string;
  /** DynamoDB Local itself, when the handlers reach it through the conflict layer (`DYNAMODB_CONFLICTS=on`). */
  dynamodbLocalEndpoint?: string;
  tableName: string;
  apiUrl: string;
  /** In-memory starts that generated it: the key sealing webhook secrets for this run. */
  webhookSecretsKey?: string;
  /** The start took its webhook secrets key from `WEBHOOK_SECRETS_KEY`: the CLI needs the same. */
  webhookSecretsKeyFromEnv?: boolean;
  /** The start's `WEBHOOK_INSECURE_ORIGINS`, so `webhooks set` judges URLs as the running stack does. */
  webhookInsecureOrigins?: string;
  /** The start's default key plan (`KEY_RATE_LIMIT`, ...), so `limits show` reports what the gateway applies. */
  keyRatePlan?: RatePlan;
  /** Where the start keeps result files and uploads (a temporary directory in memory): `accounts close` removes them. */
  mediaDir?: string;
  uploadsDir?: string;
}

function ratePlanOf(value: unknown): RatePlan | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { ratePerSecond, burst, dailyQuota } = value as Record<string, unknown>;
  if (typeof ratePerSecond !== 'number' || typeof burst !== 'number') return undefined;
  const plan: RatePlan = { ratePerSecond, burst, ...(typeof dailyQuota === 'number' ? { dailyQuota } : {}) };
  return Object.keys(ratePlanProblems(plan)).length === 0 ? plan : undefined;
}

/** The directory holding in-memory starts' records: private to this user. */
export function runDirectory(env: NodeJS.ProcessEnv = process.env): string {
  if (env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, 'generation-service');
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  return join(tmpdir(), `generation-service-${uid}`);
}

/** Creates the run directory (0700) and refuses one that another user owns or others may read. */
function privateRunDirectory(env: NodeJS.ProcessEnv): string {
  const dir = runDirectory(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  const ownUid = typeof process.getuid === 'function' ? process.getuid() : stat.uid;
  if (!stat.isDirectory() || stat.uid !== ownUid || (stat.mode & 0o077) !== 0) {
    throw new Error(`${dir} must be a directory of this user that no one else can read (chmod 700)`);
  }
  return dir;
}

function inMemoryStateFile(port: number, env: NodeJS.ProcessEnv): string {
  return join(runDirectory(env), `in-memory-${port}.json`);
}

function stateFile(dataDir: string, port: number, env: NodeJS.ProcessEnv): string {
  return dataDir === IN_MEMORY ? inMemoryStateFile(port, env) : join(resolve(dataDir), 'local-stack.json');
}

/** Records the running stack (`port`: the API's); returns how to remove the record again. */
export function writeStackState(
  dataDir: string,
  port: number,
  state: LocalStackState,
  env: NodeJS.ProcessEnv = process.env,
): () => void {
  if (dataDir === IN_MEMORY) removeStaleRecords(privateRunDirectory(env));
  const file = stateFile(dataDir, port, env);
  writeFileSync(file, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  return () => rmSync(file, { force: true });
}

/** Removes records of in-memory starts whose process is gone (killed before it could remove its own). */
function removeStaleRecords(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (!/^in-memory-\d+\.json$/.test(name)) continue;
    const file = join(dir, name);
    try {
      const { pid } = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown };
      if (typeof pid === 'number' && !alive(pid)) rmSync(file, { force: true });
    } catch {
      // Being written by another start, or removed meanwhile: not ours to judge.
    }
  }
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The running stack recorded for `dataDir` (and, in memory, the API `port`), if its process still lives. */
export function readStackState(
  dataDir: string,
  port: number,
  env: NodeJS.ProcessEnv = process.env,
): LocalStackState | undefined {
  let state: unknown;
  try {
    state = JSON.parse(readFileSync(stateFile(dataDir, port, env), 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof state !== 'object' || state === null) return undefined;
  const record = state as Record<string, unknown>;
  const { pid, dynamodbEndpoint, tableName, apiUrl } = record;
  if (typeof pid !== 'number' || typeof dynamodbEndpoint !== 'string' || typeof tableName !== 'string')
    return undefined;
  if (!alive(pid)) return undefined;
  const webhookSecretsKey = optionalString(record.webhookSecretsKey);
  const webhookInsecureOrigins = optionalString(record.webhookInsecureOrigins);
  const dynamodbLocalEndpoint = optionalString(record.dynamodbLocalEndpoint);
  const keyRatePlan = ratePlanOf(record.keyRatePlan);
  const mediaDir = optionalString(record.mediaDir);
  const uploadsDir = optionalString(record.uploadsDir);
  return {
    pid,
    dynamodbEndpoint,
    ...(dynamodbLocalEndpoint ? { dynamodbLocalEndpoint } : {}),
    tableName,
    apiUrl: typeof apiUrl === 'string' ? apiUrl : '',
    ...(webhookSecretsKey ? { webhookSecretsKey } : {}),
    ...(record.webhookSecretsKeyFromEnv === true ? { webhookSecretsKeyFromEnv: true } : {}),
    ...(webhookInsecureOrigins ? { webhookInsecureOrigins } : {}),
    ...(keyRatePlan ? { keyRatePlan } : {}),
    ...(mediaDir ? { mediaDir } : {}),
    ...(uploadsDir ? { uploadsDir } : {}),
  };
}
