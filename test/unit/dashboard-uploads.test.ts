/**
 * The dashboard's check of a chosen file (dashboard/src/uploads.ts) against the service's own check of
 * an upload's first bytes (functions/core/uploads.ts): the form refuses what the submit would refuse,
 * before anything is uploaded.
 */
import { fileProblem, sizeText, sniffType } from '../../dashboard/src/uploads';
import { sniffUploadType } from '../../functions/core/uploads';

const SAMPLES: Record<string, Uint8Array> = {
  png: Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
  jpeg: Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1]),
  webp: new TextEncoder().encode('RIFF\u0010\u0000\u0000\u0000WEBP'),
  gif: new TextEncoder().encode('GIF89a\u0001\u0000\u0001\u0000\u0000\u0000'),
  text: new TextEncoder().encode('hello, world'),
  riffNotWebp: new TextEncoder().encode('RIFF\u0010\u0000\u0000\u0000WAVE'),
  short: Uint8Array.from([0x89, 0x50]),
};

test.each(Object.entries(SAMPLES))('%s: the dashboard reads the type the service reads', (_name, bytes) => {
  // Act
  const dashboard = sniffType(bytes);
  const service = sniffUploadType(bytes);

  // Assert
  expect(dashboard).toBe(service);
});

test('a file is refused for its declared type, then for bytes that are not what it declares', () => {
  // Act
  const problems = {
    gif: fileProblem('image/gif', SAMPLES.gif as Uint8Array),
    unlabelled: fileProblem('', SAMPLES.png as Uint8Array),
    textAsPng: fileProblem('image/png', SAMPLES.text as Uint8Array),
    jpegAsPng: fileProblem('image/png', SAMPLES.jpeg as Uint8Array),
    png: fileProblem('image/png', SAMPLES.png as Uint8Array),
    webp: fileProblem('image/webp', SAMPLES.webp as Uint8Array),
  };

  // Assert
  expect(problems).toEqual({
    gif: 'Wrong type (image/gif): PNG, JPEG or WebP images only.',
    unlabelled: 'Wrong type: PNG, JPEG or WebP images only.',
    textAsPng: 'Wrong type: the file is labelled PNG but its bytes are not a PNG, JPEG or WebP image.',
    jpegAsPng: 'Wrong type: the file is labelled PNG but its bytes are JPEG.',
    png: undefined,
    webp: undefined,
  });
});

test('sizes read in B, KB and MB', () => {
  // Assert
  expect([sizeText(77), sizeText(2048), sizeText(1.5 * 1024 * 1024)]).toEqual(['77 B', '2.0 KB', '1.5 MB']);
});
