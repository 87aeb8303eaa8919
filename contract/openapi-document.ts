/**
 * The OpenAPI 3.1 document of the service, generated from the code that enforces the contract: the
 * request schemas are the valibot schemas validation runs (converted by `@valibot/to-json-schema`), the
 * paths are the route table, the per-model rules come from the catalog; the operations, webhooks and
 * schemas are in the files beside this one (contract/). `npm run openapi` writes it to
 * `docs/openapi.json`; a unit test keeps that file equal to this function's output, and the service
 * serves the committed file at `GET /api/openapi.json`.
 */

import { ROUTES } from '../lib/routes';
import packageJson from '../package.json';
import { type Json, json, ref } from './openapi-json';
import { operations } from './openapi-operations';
import { schemas } from './openapi-schemas';
import { webhookEndpointOperations } from './openapi-webhook-endpoints';
import { webhooks } from './openapi-webhooks';

/** A route without a detailed operation: account and key management (documented in docs/design/accounts.md). */
function genericOperation(method: string, path: string, sessionOnly: boolean): Json {
  return {
    summary: `${method} ${path}`,
    ...(sessionOnly ? { security: [{ session: [] }] } : {}),
    responses: {
      '200': json({ type: 'object' }, 'Success.'),
      default: json(ref('Error'), 'An error: `{ error, ... }`.'),
    },
  };
}

/** The whole document. */
export function openApiDocument(version: string): Json {
  const ops = { ...operations(), ...webhookEndpointOperations() };
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of ROUTES) {
    const key = `${route.method} ${route.path}`;
    const operation =
      ops[key] ??
      genericOperation(
        route.method,
        route.path,
        route.path.startsWith('/api/keys') || route.path.startsWith('/api/audit'),
      );
    const pathItem = paths[route.path] ?? {};
    pathItem[route.method.toLowerCase()] = {
      operationId: route.name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()),
      ...operation,
      ...(route.auth === 'none' ? { security: [] } : {}),
    };
    paths[route.path] = pathItem;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Generation service',
      version,
      description:
        'Asynchronous image and video generation tasks paid in credits: submit a task, get its id at once, poll it until it completes or fails. Credits are debited on acceptance and refunded when the provider fails the task. Errors are `{ error, ... }`.',
    },
    servers: [{ url: '/', description: "The API's base URL (the stage URL or your custom domain)." }],
    security: [{ bearerKey: [] }, { session: [] }],
    paths,
    webhooks: webhooks(),
    components: {
      securitySchemes: {
        bearerKey: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer gsk_live_...`.' },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: '__Host-session',
          description: "The dashboard's session cookie.",
        },
      },
      schemas: schemas(),
    },
  };
}

/** The document as committed: pretty JSON with a final newline, versioned as the package. */
export function openApiDocumentText(): string {
  return `${JSON.stringify(openApiDocument(packageJson.version), null, 2)}\n`;
}
