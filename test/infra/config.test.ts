/**
 * Context configuration and the LocalStack helper: pure functions, no synthesis.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { localstackEnv } from '../../bin/localstack-env';
import { CONFIG_KEYS, ConfigError, DEFAULT_CONFIG, ENVIRONMENT_PRESETS, readConfig } from '../../lib/config';
import { cdkJsonContext, TEST_PROVIDER_URL } from './support';

function configFrom(context: Record<string, unknown>) {
  // A provider URL unless the case gives one: the shipped placeholder is refused (tested below).
  return readConfig(new App({ context: { providerBaseUrl: TEST_PROVIDER_URL, ...context } }).node);
}

test('cdk.json picks the prod environment and the provider URL; every other key has its default in code', () => {
  // Prepare
  const context = cdkJsonContext();

  // Act
  const keys = Object.keys(context).filter((key) => !key.startsWith('@') && key !== 'cli-telemetry');

  // Assert
  expect(keys.sort()).toEqual(['env', 'providerBaseUrl']);
  expect(configFrom({ ...context, providerBaseUrl: TEST_PROVIDER_URL })).toEqual({
    ...DEFAULT_CONFIG,
    ...ENVIRONMENT_PRESETS.prod,
    providerBaseUrl: TEST_PROVIDER_URL,
  });
  expect(context['cli-telemetry']).toBe(false);
});

test('env=dev selects the dev preset; an explicit key still wins over it; no env means the defaults alone', () => {
  // Act
  const dev = configFrom({ env: 'dev' });
  const devWithRetention = configFrom({ env: 'dev', logRetentionDays: '30', retainData: 'true' });
  const plain = configFrom({});

  // Assert
  expect(dev).toMatchObject({
    stackName: 'GenerationService-dev',
    retainData: false,
    logRetentionDays: 7,
    logLevel: 'DEBUG',
    keyRateLimit: 20,
    wafRequestsPerIpPerMinute: 0,
  });
  expect(devWithRetention).toMatchObject({
    stackName: 'GenerationService-dev',
    logRetentionDays: 30,
    retainData: true,
  });
  expect(plain).toEqual({ ...DEFAULT_CONFIG, providerBaseUrl: TEST_PROVIDER_URL });
  expect(() => configFrom({ env: 'staging' })).toThrow(/^env must be one of dev, prod/);
});

test('every configuration key is in the context key table of docs/guides/configuration.md', () => {
  // Prepare
  const guide = readFileSync(join(__dirname, '..', '..', 'docs', 'guides', 'configuration.md'), 'utf8');

  // Act
  const rows = guide.split('\n').filter((line) => line.startsWith('| `'));

  // Assert
  for (const key of [...CONFIG_KEYS, 'env']) {
    const row = rows.find((line) => (line.split('|')[1] ?? '').includes(`\`${key}\``));
    expect({ key, row }).toEqual({ key, row: expect.any(String) });
  }
});

test('synth refuses the placeholder provider URL of cdk.json, naming the setting and how to set it', () => {
  // Act
  const refuse = () => configFrom(cdkJsonContext());

  // Assert
  expect(refuse).toThrow(ConfigError);
  expect(refuse).toThrow(
    /^providerBaseUrl is still the placeholder https:\/\/provider\.example\.invalid: .*-c providerBaseUrl=/,
  );
});

test('values given with -c arrive as strings and are parsed', () => {
  // Act
  const config = configFrom({
    authorizerCacheTtlSeconds: '0',
    retainData: 'false',
    logLevel: 'debug',
    providerBaseUrl: 'https://provider.example.com/',
  });

  // Assert
  expect(config).toMatchObject({
    authorizerCacheTtlSeconds: 0,
    retainData: false,
    logLevel: 'DEBUG',
    providerBaseUrl: 'https://provider.example.com',
  });
});

test('mediaSourceHosts is a normalised list of host names or *.domain rules', () => {
  // Act
  const config = configFrom({ mediaSourceHosts: ' CDN.Provider.example , *.media.provider.example ' });

  // Assert
  expect(config.mediaSourceHosts).toBe('cdn.provider.example,*.media.provider.example');
});

test('maxActiveKeys caps the active keys per account: 20 unless the context says otherwise', () => {
  // Act
  const fallback = configFrom({});
  const set = configFrom({ maxActiveKeys: '5' });

  // Assert
  expect(fallback.maxActiveKeys).toBe(20);
  expect(set.maxActiveKeys).toBe(5);
});

test('maxQueuedTasksPerAccount bounds the tasks an account may have queued: 1000 unless the context says otherwise', () => {
  // Act
  const fallback = configFrom({});
  const set = configFrom({ maxQueuedTasksPerAccount: '3' });

  // Assert
  expect(fallback.maxQueuedTasksPerAccount).toBe(1000);
  expect(set.maxQueuedTasksPerAccount).toBe(3);
});

test('LocalStack mode never retains data', () => {
  // Act
  const config = configFrom({ localstack: 'true', retainData: true });

  // Assert
  expect(config).toMatchObject({ localstack: true, retainData: false });
});

test.each([
  [{ authorizerCacheTtlSeconds: 3601 }],
  [{ logRetentionDays: 31 }],
  [{ maxPendingSeconds: '1.5' }],
  [{ retainData: 'yes' }],
  [{ providerBaseUrl: 'provider.example.com' }],
  [{ alarmEmail: 'not-an-address' }],
  [{ maxPendingSeconds: 60, providerRefreshIntervalSeconds: 60 }],
  [{ logLevel: 'TRACE' }],
  // Signed with the functions' role session, a URL cannot be promised to live longer than an hour.
  [{ mediaUrlTtlSeconds: 3601 }],
  [{ mediaUrlTtlSeconds: 604800 }],
  [{ mediaSourceHosts: 'https://cdn.example' }],
  [{ mediaSourceHosts: 'cdn.example,10.0.0.0/8' }],
  [{ mediaSourceHosts: '*' }],
  // One key's plan may never exceed what the whole stage allows.
  [{ keyRateLimit: 2000, throttlingRateLimit: 1000 }],
  [{ keyBurstLimit: 3000, throttlingBurstLimit: 2000 }],
  [{ keyRateLimit: 0 }],
  [{ keyDailyQuota: -1 }],
  [{ maxActiveKeys: 0 }],
  [{ maxActiveKeys: 1001 }],
  [{ maxQueuedTasksPerAccount: 0 }],
  [{ maxQueuedTasksPerAccount: 10001 }],
  [{ maxQueuedTasksPerAccount: '12.5' }],
  [{ maxQueuedTasksPerAccount: 'many' }],
  [{ wafRequestsPerIpPerMinute: 5 }],
])('rejects %j', (context) => {
  // Act
  const read = () => configFrom(context);

  // Assert
  expect(read).toThrow(ConfigError);
});

test('the LocalStack environment points at the path-based API URL of the deployed stage', () => {
  // Prepare
  const outputs = {
    GenerationService: { ApiId: 'abc123', StageName: 'prod', TableName: 't', BucketName: 'b', ApiUrl: 'x' },
  };

  // Act
  const env = localstackEnv(outputs, 'http://localhost:4566/');

  // Assert
  expect(env).toEqual({
    API_BASE_URL: 'http://localhost:4566/_aws/execute-api/abc123/prod',
    E2E_TARGET: 'localstack',
    TABLE_NAME: 't',
    MEDIA_BUCKET: 'b',
    AWS_ENDPOINT_URL: 'http://localhost:4566',
  });
});

test('the LocalStack environment refuses ambiguous or incomplete outputs', () => {
  // Prepare
  const two = { A: { ApiId: 'a' }, B: { ApiId: 'b' } };

  // Act
  const ambiguous = () => localstackEnv(two, 'http://localhost:4566');
  const incomplete = () => localstackEnv(two, 'http://localhost:4566', 'A');

  // Assert
  expect(ambiguous).toThrow(/cannot tell the stack/);
  expect(incomplete).toThrow(/StageName is missing/);
});
