/**
 * Answers the gateway makes itself (401, 403, unknown route 404, 413): their status codes hold on every
 * target; their bodies only reach the client where the target returns gateway response bodies.
 */
import type { ApiResponse } from './api';
import type { Target } from './target';

export function expectGatewayAnswer(target: Target, response: ApiResponse, status: number, body: unknown): void {
  expect(response.status).toBe(status);
  if (target.can('gatewayBodies')) expect(response.body).toEqual(body);
}
