/**
 * The local stack's settings (DESIGN.md's table), read from the environment. The operator CLI reads
 * the same ones so that it talks to the stack `npm start` runs.
 */
import { DEFAULT_TABLE_NAME } from '../functions/store/table';

export interface LocalSettings {
  host: string;
  port: number;
  dynamodbPort: number;
  mockProviderPort: number;
  tableName: string;
  /** Directory for DynamoDB Local's files and stored media; `:memory:` keeps nothing. */
  dataDir: string;
  providerRefreshIntervalSeconds: number;
  authorizerCacheTtlSeconds: number;
  maxPendingSeconds: number;
  /** Use this DynamoDB (e.g. one you run yourself) instead of starting DynamoDB Local. */
  dynamodbEndpoint?: string;
  /** How often the sweeper runs locally (EventBridge runs it every minute in AWS). */
  sweeperIntervalSeconds: number;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number >= 0, got "${raw}"`);
  return value;
}

export function localSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): LocalSettings {
  return {
    host: '127.0.0.1',
    port: int(env, 'PORT', 3000),
    dynamodbPort: int(env, 'DYNAMODB_PORT', 8000),
    mockProviderPort: int(env, 'MOCK_PROVIDER_PORT', 3001),
    tableName: env.TABLE_NAME || DEFAULT_TABLE_NAME,
    dataDir: env.DATA_DIR || '.data',
    providerRefreshIntervalSeconds: int(env, 'PROVIDER_REFRESH_INTERVAL_SECONDS', 30),
    authorizerCacheTtlSeconds: int(env, 'AUTHORIZER_CACHE_TTL_SECONDS', 60),
    maxPendingSeconds: int(env, 'MAX_PENDING_SECONDS', 1800),
    sweeperIntervalSeconds: int(env, 'SWEEPER_INTERVAL_SECONDS', 10),
    dynamodbEndpoint: env.DYNAMODB_ENDPOINT || undefined,
  };
}
