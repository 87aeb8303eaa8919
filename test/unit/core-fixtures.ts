// Shared request builders for the catalog, pricing and validation tests (not a test file itself).
import { type VideoModelId, videoModel } from '../../functions/core/catalog';
import { type ValidationDetails, ValidationError } from '../../functions/core/errors';

export const IMAGE_URL = 'https://images.example.com/ref.png';

export const urls = (count: number): string[] =>
  Array.from({ length: count }, (_, i) => `https://images.example.com/ref-${i}.png`);

/** The smallest valid image body for `model`, with `extra` merged over it. */
export const imageBody = (model: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  prompt: 'a red fox in fresh snow',
  model,
  ...extra,
});

/** The smallest valid video body for `model` (its first input mode, with one image when it needs one). */
export const videoBody = (model: VideoModelId, extra: Record<string, unknown> = {}): Record<string, unknown> => {
  const inputMode = videoModel(model).inputModes[0];
  return {
    prompt: 'a paper boat drifting down a rainy street',
    model,
    inputMode,
    ...(inputMode === 'image_to_video' ? { inputImageUrls: [IMAGE_URL] } : {}),
    ...extra,
  };
};

/** The details of the ValidationError `act` throws; fails the test when it throws anything else or nothing. */
export function rejectionOf(act: () => unknown): ValidationDetails {
  let thrown: unknown;
  try {
    act();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ValidationError);
  return (thrown as ValidationError).details;
}
