/**
 * Response shaping: the one place that builds API Gateway proxy results, so every answer has the same
 * headers whatever handler or error produced it.
 */
import type { APIGatewayProxyResult } from 'aws-lambda';

/** A JSON response; task state changes, so nothing is cacheable by intermediaries. */
export function jsonResponse(
  statusCode: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  // 204 No Content carries no body, hence no type.
  if (statusCode === 204) return { statusCode, headers: { 'Cache-Control': 'no-store', ...headers }, body: '' };
  return {
    statusCode,
    headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers },
    body: JSON.stringify(body),
  };
}
