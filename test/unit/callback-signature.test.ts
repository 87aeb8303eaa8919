import { callbackSignature, callbackSignatureMatches, callbackUrl } from '../../functions/core/callback-signature';
import { providerCallbacksFromEnv } from '../../functions/provider/callback-secret';

const SECRET = 'a-callback-secret-of-at-least-32-characters';

describe('callback signatures', () => {
  test('a signature matches only the task and owner it was made for', () => {
    // Prepare
    const signature = callbackSignature(SECRET, 'user-1', 'task-1');

    // Act
    const checks = {
      own: callbackSignatureMatches(SECRET, 'user-1', 'task-1', signature),
      otherTask: callbackSignatureMatches(SECRET, 'user-1', 'task-2', signature),
      otherUser: callbackSignatureMatches(SECRET, 'user-2', 'task-1', signature),
      otherSecret: callbackSignatureMatches(`${SECRET}x`, 'user-1', 'task-1', signature),
      truncated: callbackSignatureMatches(SECRET, 'user-1', 'task-1', signature.slice(0, -1)),
      empty: callbackSignatureMatches(SECRET, 'user-1', 'task-1', ''),
    };

    // Assert
    expect(checks).toEqual({
      own: true,
      otherTask: false,
      otherUser: false,
      otherSecret: false,
      truncated: false,
      empty: false,
    });
  });

  test('the owner and task cannot be shifted between the two fields', () => {
    // Act
    const a = callbackSignature(SECRET, 'ab', 'c');
    const b = callbackSignature(SECRET, 'a', 'bc');

    // Assert
    expect(a).not.toBe(b);
  });

  test('the URL carries the task in the path, the owner and signature in the query', () => {
    // Act
    const url = new URL(callbackUrl('https://api.example.com/', SECRET, 'user/1', 'task-1'));

    // Assert
    expect(url.pathname).toBe('/api/provider/callbacks/task-1');
    expect(url.searchParams.get('u')).toBe('user/1');
    expect(url.searchParams.get('sig')).toBe(callbackSignature(SECRET, 'user/1', 'task-1'));
  });
});

describe('providerCallbacksFromEnv', () => {
  test('no base URL: callbacks are off', () => {
    // Act
    const callbacks = providerCallbacksFromEnv({ PROVIDER_CALLBACK_SECRET: SECRET });

    // Assert
    expect(callbacks).toBeUndefined();
  });

  test('a base URL without a secret is a loud configuration error', () => {
    // Act / Assert
    expect(() => providerCallbacksFromEnv({ PROVIDER_CALLBACK_BASE_URL: 'https://x.example' })).toThrow(
      /PROVIDER_CALLBACK_SECRET/,
    );
  });

  test('a short secret is refused', async () => {
    // Prepare
    const callbacks = providerCallbacksFromEnv({
      PROVIDER_CALLBACK_BASE_URL: 'https://x.example',
      PROVIDER_CALLBACK_SECRET: 'short',
    });

    // Act / Assert
    await expect(callbacks?.urlFor('u', 't')).rejects.toThrow(/at least 32/);
  });

  test('the secret from Secrets Manager is read once and verifies what it signed', async () => {
    // Prepare
    const calls: string[] = [];
    const fakeFetch = (async (_url: unknown, init?: RequestInit) => {
      calls.push(String(init?.body));
      return new Response(JSON.stringify({ SecretString: SECRET }), { status: 200 });
    }) as typeof fetch;
    const callbacks = providerCallbacksFromEnv(
      {
        PROVIDER_CALLBACK_BASE_URL: 'https://x.example',
        PROVIDER_CALLBACK_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:1:secret:cb',
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'secret',
      },
      fakeFetch,
    );

    // Act
    const url = new URL((await callbacks?.urlFor('user-1', 'task-1')) ?? '');
    const valid = await callbacks?.verify('user-1', 'task-1', url.searchParams.get('sig') ?? '');
    const forged = await callbacks?.verify('user-1', 'task-1', callbackSignature('another-secret', 'user-1', 'task-1'));

    // Assert
    expect(calls).toHaveLength(1);
    expect(valid).toBe(true);
    expect(forged).toBe(false);
  });
});
