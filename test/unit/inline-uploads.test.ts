/**
 * Inline `data:` reference images (functions/lifecycle/inline-uploads.ts): which entries are taken out
 * of a request, what each becomes, and the limits (each entry, and the total a 6 MB Lambda payload
 * leaves room for).
 */
import { ValidationError } from '../../functions/core/errors';
import { INLINE_IMAGES_MAX_BYTES, takeInlineImages } from '../../functions/lifecycle/inline-uploads';

const PNG_HEAD = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const png = (size: number) => Buffer.concat([PNG_HEAD, Buffer.alloc(Math.max(0, size - PNG_HEAD.length))]);
const uri = (bytes: Buffer, type = 'image/png') => `data:${type};base64,${bytes.toString('base64')}`;

function fieldErrorsOf(run: () => unknown): Record<string, string[]> {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.details.fieldErrors as Record<string, string[]>;
    throw error;
  }
  throw new Error('no ValidationError');
}

test('data: entries become upload:// references in place; other entries and fields are left as they are', () => {
  // Prepare
  const body = { model: 'm', prompt: 'p', inputImageUrls: ['https://example.com/a.png', uri(png(64)), 'upload://x'] };

  // Act
  const { body: out, images } = takeInlineImages(body, 1000);

  // Assert
  const urls = (out as { inputImageUrls: string[] }).inputImageUrls;
  expect(urls[0]).toBe('https://example.com/a.png');
  expect(urls[1]).toBe(`upload://${images[0]?.uploadId}`);
  expect(urls[2]).toBe('upload://x');
  expect(images).toEqual([{ index: 1, uploadId: expect.any(String), contentType: 'image/png', bytes: png(64) }]);
  expect(body.inputImageUrls[1]).toMatch(/^data:/);
});

test('a body without data: entries is the same object, with nothing to store', () => {
  // Prepare
  const body = { inputImageUrls: ['https://example.com/a.png'] };

  // Act
  const taken = takeInlineImages(body, 1000);

  // Assert
  expect(taken.body).toBe(body);
  expect(taken.images).toEqual([]);
});

test('the type parameter is read in any case, base64 may wrap over lines, and an empty image is refused', () => {
  // Act
  const wrapped = takeInlineImages(
    {
      inputImageUrls: [
        `DATA:Image/PNG;BASE64,${png(60)
          .toString('base64')
          .replace(/(.{16})/g, '$1\n')}`,
      ],
    },
    1000,
  );
  const empty = fieldErrorsOf(() => takeInlineImages({ inputImageUrls: ['data:image/png;base64,'] }, 1000));

  // Assert
  expect(wrapped.images[0]?.bytes).toEqual(png(60));
  expect(empty).toEqual({ 'inputImageUrls.0': ['The inline image is empty'] });
});

test('each image is held to the upload limit, and all of a request to what a 6 MB Lambda payload carries', () => {
  // Prepare
  const half = png(INLINE_IMAGES_MAX_BYTES / 2 + 1);

  // Act
  const overLimit = fieldErrorsOf(() => takeInlineImages({ inputImageUrls: [uri(png(101))] }, 100));
  const overTotal = fieldErrorsOf(() => takeInlineImages({ inputImageUrls: [uri(half), uri(half)] }, 20 * 1024 * 1024));

  // Assert
  expect(overLimit).toEqual({
    'inputImageUrls.0': ['The inline image is larger than 100 bytes: send it with POST /api/ai/uploads'],
  });
  expect(overTotal).toEqual({
    'inputImageUrls.1': [
      `Inline images may total at most ${INLINE_IMAGES_MAX_BYTES} bytes per request: send larger ones with POST /api/ai/uploads`,
    ],
  });
  // 4 MiB of image is 5.6 MB of base64: with the rest of the event, under Lambda's 6,291,456 bytes.
  expect(Math.ceil(INLINE_IMAGES_MAX_BYTES / 3) * 4).toBeLessThan(6_291_456 - 100_000);
});
