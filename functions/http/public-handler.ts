/**
 * The middy stack of the routes without an authorizer (starting sign-in and its callback): the one
 * error handler, then the handler, which gets the raw event and builds its own redirect or page.
 */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { withInvocation } from '../observability/logger';
import { httpErrorHandler } from './error-handler';
import { timeoutPlugin } from './timeout';

export function publicHandler(handle: (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>) {
  const handler = middy<APIGatewayProxyEvent, APIGatewayProxyResult, Error, Context>(timeoutPlugin)
    .use(httpErrorHandler())
    .handler(async (event) => handle(event));
  return withInvocation(
    (event: APIGatewayProxyEvent, context: Context) => handler(event, context),
    (event, context) => event.requestContext?.requestId ?? context?.awsRequestId,
  );
}
