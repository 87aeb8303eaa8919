/**
 * GET /api/ai/models: the catalog as clients need it (modes, limits, durations, resolutions, aspect
 * ratios, prices), rendered from the catalog validation and pricing use.
 */
import { modelsResource } from '../core/models-resource';
import { apiHandler } from '../http/api-handler';

export const handler = apiHandler({ jsonBody: false }, async () => ({ statusCode: 200, body: modelsResource() }));
