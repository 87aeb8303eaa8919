/**
 * The price the new-task form shows before submitting, worked out from the `GET /api/ai/models`
 * answer: for every model and every choice the form offers, it equals what the service debits for the
 * request the form sends (`priceImage` / `priceVideo`).
 */
import { type Model, priceOf } from '../../dashboard/src/price';
import { modelsResource } from '../../functions/core/models-resource';
import { priceImage, priceVideo } from '../../functions/core/pricing';
import type { ImageRequest, VideoRequest } from '../../functions/core/validation';

// The resource's readonly arrays are the same data the dashboard's (mutable) view describes.
const models = modelsResource().models as unknown as Model[];

describe('priceOf (new-task form)', () => {
  test('every image tier and image count: the shown price is what the service debits', () => {
    // Prepare
    const cases = models.flatMap((model) =>
      model.type !== 'image'
        ? []
        : model.prices.flatMap((tier) =>
            [1, 2, 10].map((numOutputs) => ({ model, tier: tier.resolution, numOutputs })),
          ),
    );

    // Act
    const mismatches = cases.filter(({ model, tier, numOutputs }) => {
      const request = { model: model.id, prompt: 'p', numOutputs, providerInput: { resolution: tier } };
      return priceOf(model, { resolution: tier, duration: 0, numOutputs }) !== priceImage(request as ImageRequest);
    });

    // Assert
    expect(cases.length).toBeGreaterThan(20);
    expect(mismatches).toEqual([]);
  });

  test('every video duration and resolution: the shown price is what the service debits', () => {
    // Prepare
    const cases = models.flatMap((model) =>
      model.type !== 'video'
        ? []
        : model.durations.flatMap((duration) =>
            model.resolutions.map((resolution) => ({ model, duration, resolution })),
          ),
    );

    // Act
    const mismatches = cases.filter(({ model, duration, resolution }) => {
      const request = {
        model: model.id,
        prompt: 'p',
        inputMode: model.inputModes[0],
        duration,
        providerInput: { resolution },
      };
      return priceOf(model, { resolution, duration, numOutputs: 1 }) !== priceVideo(request as VideoRequest);
    });

    // Assert
    expect(cases.length).toBeGreaterThan(30);
    expect(mismatches).toEqual([]);
  });

  test('choices the model does not price have no price, so the form cannot be submitted', () => {
    // Prepare
    const byId = (id: string) => models.find((one) => one.id === id) as Model;

    // Act
    const tier = priceOf(byId('image-model-3'), { resolution: '1K', duration: 0, numOutputs: 1 });
    const count = priceOf(byId('image-model-1'), { resolution: '1K', duration: 0, numOutputs: 11 });
    const duration = priceOf(byId('video-d3'), { resolution: '720p', duration: 5, numOutputs: 1 });

    // Assert
    expect(tier).toBeUndefined();
    expect(count).toBeUndefined();
    expect(duration).toBeUndefined();
  });
});
