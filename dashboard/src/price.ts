/**
 * The price of the new-task form's choices, from the `GET /api/ai/models` answer. No DOM here, so a
 * unit test can hold it against the service's own pricing.
 */
import type { Model } from './api';

export type { Model };

/** The price of the choices, or undefined when the model lists none for them. */
export function priceOf(
  model: Model,
  choice: { resolution: string; duration: number; numOutputs: number },
): number | undefined {
  if (model.type === 'image') {
    const tier = model.prices.find((price) => price.resolution === choice.resolution);
    return tier && Number.isInteger(choice.numOutputs) && choice.numOutputs >= 1 && choice.numOutputs <= 10
      ? tier.creditsPerImage * choice.numOutputs
      : undefined;
  }
  return model.prices.find((price) => price.duration === choice.duration && price.resolution === choice.resolution)
    ?.credits;
}
