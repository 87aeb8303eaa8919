/**
 * The local services answer this machine only: each binds to 127.0.0.1, and DynamoDB Local, which
 * cannot (it listens on every address), at least refuses browsers, so no web page can reach the table.
 */
import { startMockProvider } from '../../local/mock-provider';
import { testEndpoint } from '../support/dynamodb';

describe('local services', () => {
  test('DynamoDB Local answers no cross-origin preflight (a web page cannot call it)', async () => {
    // Act
    const preflight = await fetch(testEndpoint(), {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://attacker.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,content-type,x-amz-target',
      },
    });

    // Assert
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('the mock provider listens on 127.0.0.1 only', async () => {
    // Prepare
    const provider = await startMockProvider();

    // Act
    const { hostname } = new URL(provider.url);
    await provider.stop();

    // Assert
    expect(hostname).toBe('127.0.0.1');
  });
});
