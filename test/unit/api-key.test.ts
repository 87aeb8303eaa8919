import { createHash } from 'node:crypto';
import {
  API_KEY_PREFIX,
  generateApiKey,
  generateKeyId,
  hashApiKey,
  isApiKeyFormat,
  isKeyExpired,
  isKeyIdFormat,
  keyPrefix,
  parseBearer,
} from '../../functions/core/api-key';

describe('generateApiKey', () => {
  it('makes a prefixed key of 256 random bits in base64url and a key id', () => {
    // Act
    const { apiKey, keyId } = generateApiKey();

    // Assert
    expect(apiKey).toMatch(/^gsk_live_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(apiKey.slice(API_KEY_PREFIX.length), 'base64url')).toHaveLength(32);
    expect(keyId).toMatch(/^key_[a-z0-9]{12}$/);
    expect(isApiKeyFormat(apiKey)).toBe(true);
    expect(isKeyIdFormat(keyId)).toBe(true);
  });

  it('never repeats a key or a key id over many draws', () => {
    // Act
    const drawn = Array.from({ length: 2000 }, () => generateApiKey());

    // Assert
    expect(new Set(drawn.map((k) => k.apiKey)).size).toBe(2000);
    expect(new Set(drawn.map((k) => k.keyId)).size).toBe(2000);
  });

  it('uses every base64url character with roughly equal frequency (no fixed or biased positions)', () => {
    // Prepare
    const counts = new Map<string, number>();

    // Act
    for (let i = 0; i < 2000; i++) {
      for (const ch of generateApiKey().apiKey.slice(API_KEY_PREFIX.length, -1)) {
        counts.set(ch, (counts.get(ch) ?? 0) + 1);
      }
    }

    // Assert: 84,000 characters over 64 symbols, about 1,312 each.
    expect(counts.size).toBe(64);
    for (const count of counts.values()) {
      expect(count).toBeGreaterThan(1000);
      expect(count).toBeLessThan(1650);
    }
  });

  it('draws key id characters from the whole alphabet', () => {
    // Act
    const chars = new Set(Array.from({ length: 500 }, () => generateKeyId().slice(4)).join(''));

    // Assert
    expect(chars.size).toBe(36);
  });
});

describe('hashApiKey and keyPrefix', () => {
  it('hashes with SHA-256 to lower-case hex', () => {
    // Prepare
    const apiKey = 'gsk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

    // Act
    const hash = hashApiKey(apiKey);

    // Assert
    expect(hash).toBe(createHash('sha256').update(apiKey).digest('hex'));
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(`${apiKey.slice(0, -1)}B`)).not.toBe(hash);
  });

  it('shows the fixed prefix and six characters of the key, no more', () => {
    // Prepare
    const apiKey = 'gsk_live_AbC123xyzxyzxyzxyzxyzxyzxyzxyzxyzxyzxyzxy';

    // Act
    const shown = keyPrefix(apiKey);

    // Assert
    expect(shown).toBe('gsk_live_AbC123');
  });
});

describe('isApiKeyFormat', () => {
  it.each([
    'gsk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    'gsk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    'gsk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    'GSK_LIVE_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    'gsk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
    'gsk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+',
  ])('rejects %s', (token) => {
    // Act
    const ok = isApiKeyFormat(token);

    // Assert
    expect(ok).toBe(false);
  });
});

describe('parseBearer', () => {
  const key = 'gsk_live_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd';

  it.each([
    [`Bearer ${key}`, key],
    [`bearer ${key}`, key],
    [`BEARER ${key}`, key],
    ['Bearer abc.DEF~ghi+/==', 'abc.DEF~ghi+/=='],
  ])('reads %j', (header, token) => {
    // Act
    const parsed = parseBearer(header);

    // Assert
    expect(parsed).toBe(token);
  });

  it.each([
    undefined,
    '',
    'Bearer',
    'Bearer ',
    `Bearer  ${key}`,
    ` Bearer ${key}`,
    `Bearer ${key} `,
    `Bearer ${key}\n`,
    `Bearer\t${key}`,
    `Bearer ${key} extra`,
    `Bearer ${key},Bearer ${key}`,
    `Basic ${key}`,
    `Token ${key}`,
    key,
    `Bearer "${key}"`,
    'Bearer a=b',
    'Bearer ==',
    `Bearer ${'a'.repeat(257)}`,
    'Bearer gsk_live_é',
  ])('rejects %j', (header) => {
    // Act
    const parsed = parseBearer(header);

    // Assert
    expect(parsed).toBeUndefined();
  });
});

describe('isKeyExpired (expiry at the boundary second)', () => {
  const expiresAt = 1_900_000_000;

  it('is valid until the last millisecond before expiresAt and expired from expiresAt on', () => {
    // Act
    const results = [
      isKeyExpired(expiresAt, new Date(expiresAt * 1000 - 1)),
      isKeyExpired(expiresAt, new Date(expiresAt * 1000)),
      isKeyExpired(expiresAt, new Date(expiresAt * 1000 + 999)),
      isKeyExpired(undefined, new Date(8.64e15)),
    ];

    // Assert
    expect(results).toEqual([false, true, true, false]);
  });
});
