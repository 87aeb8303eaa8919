/**
 * POST /api/ai/image/generate
 */

import { priceImage } from '../core/pricing';
import { validateImageRequest } from '../core/validation';
import { submitHandler } from '../http/submit-handler';

export const handler = submitHandler({
  type: 'image',
  validate: validateImageRequest,
  price: priceImage,
});
