/**
 * POST /api/ai/video/generate
 */

import { priceVideo } from '../core/pricing';
import { validateVideoRequest } from '../core/validation';
import { submitHandler } from '../http/submit-handler';

export const handler = submitHandler({
  type: 'video',
  validate: validateVideoRequest,
  price: priceVideo,
});
