import { resetWorkerLifecycleFromEnv, workerLifecycleFromEnv } from '../../functions/runtime/worker-lifecycle-from-env';

describe('the media worker wiring', () => {
  afterEach(() => resetWorkerLifecycleFromEnv());

  test('starts without any provider setting and refuses to call the provider', async () => {
    // Prepare: what the stack gives the worker (table, media), no PROVIDER_* at all
    const env = {
      TABLE_NAME: 'worker-test',
      AWS_REGION: 'local',
      MEDIA_DIR: '/tmp/worker-test-media',
      MEDIA_BASE_URL: 'http://127.0.0.1:1',
    };

    // Act
    const lc = workerLifecycleFromEnv(env);

    // Assert
    await expect(lc.provider.getTask('any')).rejects.toThrow(/no provider access/);
    await expect(lc.provider.createTask({ model: 'm', input: {} })).rejects.toThrow(/no provider access/);
    expect(typeof lc.media.copyFromUrl).toBe('function');
  });
});
