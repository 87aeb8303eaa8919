import { ApiError } from '../../dashboard/src/api';
import { keyFailureText } from '../../dashboard/src/key-messages';

describe('what the key page says when a key action is refused', () => {
  test('the cap names the limit and what to do', () => {
    // Prepare
    const refused = new ApiError(409, { error: 'This account already has 20 active API keys', limit: 20 });

    // Act
    const text = keyFailureText(refused);

    // Assert
    expect(text).toBe(
      'This account already has 20 active keys, the most it may hold. Revoke a key you no longer use, then try again.',
    );
  });

  test('a busy key service says nothing was created and to try again', () => {
    // Act
    const text = keyFailureText(new ApiError(503, { error: 'Key service busy, retry later' }));

    // Assert
    expect(text).toBe('The key service is busy right now. No key was created; please try again in a few seconds.');
  });

  test('any other refusal shows the API message', () => {
    // Act
    const text = keyFailureText(new ApiError(409, { error: 'API key key_x is revoked' }));

    // Assert
    expect(text).toBe('API key key_x is revoked');
  });
});
