/**
 * GET /api/openapi.json: the OpenAPI document, without credentials. It is the committed
 * `docs/openapi.json` (generated from the code by `npm run openapi`, kept equal by a test), bundled in.
 */
import document from '../../docs/openapi.json';
import { publicHandler } from '../http/public-handler';

const body = JSON.stringify(document);

export const handler = publicHandler(async () => ({
  statusCode: 200,
  headers: { 'Content-Type': 'application/json', 'Cache-Control': 'public, max-age=300' },
  body,
}));
