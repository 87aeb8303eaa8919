/**
 * What clients read about a failure: a stable message per code, plus the provider's own words,
 * cleaned and bounded whatever the provider sends.
 */
import {
  boundProviderText,
  clientErrorMessage,
  ERROR_CODES,
  ERROR_MESSAGES,
  MAX_PROVIDER_MESSAGE_LENGTH,
} from '../../functions/core/task';

describe('clientErrorMessage', () => {
  test.each(ERROR_CODES)('%s has a stable message of its own', (code) => {
    // Act
    const message = clientErrorMessage(code);

    // Assert
    expect(message).toBe(ERROR_MESSAGES[code]);
    expect(message.length).toBeLessThan(60);
  });

  test('appends the provider message after the stable one', () => {
    // Act
    const message = clientErrorMessage('PROVIDER_REJECTED', 'Prompt flagged');

    // Assert
    expect(message).toBe('The provider refused the request: Prompt flagged');
  });

  test('a provider message of any size stays bounded (the refund transaction cannot grow with it)', () => {
    // Prepare
    const huge = 'x'.repeat(5_000_000);

    // Act
    const message = clientErrorMessage('PROVIDER_ERROR', huge);

    // Assert
    expect(Array.from(message).length).toBeLessThanOrEqual(
      ERROR_MESSAGES.PROVIDER_ERROR.length + 2 + MAX_PROVIDER_MESSAGE_LENGTH,
    );
    expect(message.endsWith('…')).toBe(true);
  });
});

describe('boundProviderText', () => {
  test.each([
    ['URLs (with their tokens) are replaced', 'see https://cdn.x/a.png?token=s3cr3t now', 'see [url] now'],
    ['control characters and new lines become spaces', 'line1\r\n\tline2\u0000\u202e', 'line1 line2'],
    ['emoji are cut whole, by code point', '😀'.repeat(10), '😀'.repeat(10)],
  ])('%s', (_case, input, expected) => {
    // Act
    const bounded = boundProviderText(input, 20);

    // Assert
    expect(bounded).toBe(expected);
  });

  test('nothing left after cleaning is no message at all', () => {
    // Act
    const bounded = boundProviderText(' \n\t ', 20);

    // Assert
    expect(bounded).toBeUndefined();
  });

  test('cuts at the bound with an ellipsis', () => {
    // Act
    const bounded = boundProviderText('😀'.repeat(30), 10);

    // Assert
    expect(bounded).toBe(`${'😀'.repeat(9)}…`);
  });
});
