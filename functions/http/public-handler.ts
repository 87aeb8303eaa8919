/**
 * The middy stack of the routes without an authorizer (starting sign-in and its callback): the one
 * error handler, then the handler, which gets the raw event and builds its own redirect or page.
 */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { httpErrorHandler } from './error-handler';

export function publicHandler(handle: (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>) {
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult, Error, Context>()
    .use(httpErrorHandler())
    .handler(async (event) => handle(event));
}
