/** Texts of the key page that depend on the API's answer (no DOM: unit-tested as they are). */
import { ApiError } from './api';

/**
 * What a refused key action tells a person: at the cap, how many keys the account may hold and what to
 * do; when the service is busy, that nothing was created and to try again; else the API's own message.
 */
export function keyFailureText(failure: unknown): string {
  if (failure instanceof ApiError && failure.status === 409 && typeof failure.body.limit === 'number') {
    return `This account already has ${failure.body.limit} active keys, the most it may hold. Revoke a key you no longer use, then try again.`;
  }
  if (failure instanceof ApiError && failure.status === 503) {
    return 'The key service is busy right now. No key was created; please try again in a few seconds.';
  }
  return (failure as Error).message;
}
