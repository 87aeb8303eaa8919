/**
 * What the middy stack does when a request nears the function's end: answer 503 with `Retry-After`
 * (core/errors.ts `RequestOutOfTimeError`) rather than middy's default `TimeoutError`, which the error
 * handler could only call unexpected (500). A loaded table can make a burst of accepts slow; the caller
 * is told to retry, not that the service broke.
 */
import { RequestOutOfTimeError } from '../core/errors';

/**
 * How long before the function's end the answer is given: room for the error handler and the response
 * to leave before Lambda (or API Gateway's 29 s) cuts the request off.
 */
export const TIMEOUT_MARGIN_MS = 500;

/** The plugin options both middy stacks (api-handler.ts, public-handler.ts) are built with. */
export const timeoutPlugin = {
  timeoutEarlyInMillis: TIMEOUT_MARGIN_MS,
  timeoutEarlyResponse: (): never => {
    throw new RequestOutOfTimeError();
  },
};
