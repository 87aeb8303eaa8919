/**
 * The one check of what an account's closure stops off the request path
 * (docs/design/accounts.md#closing-an-account). A task at the provider when its account closes runs to
 * its end, but nothing of it reaches anyone: its results are not copied in (copy-results.ts), no webhook
 * delivery is opened for it nor for an account event (webhooks.ts, account-events.ts), and a delivery
 * open at the closure is ended at its next attempt without a request (webhooks.ts,
 * endpoint-deliveries.ts). Why: the owner asked for the account to be gone, and signed traffic about it
 * to URLs it configured would tell whoever holds those URLs about an account that no longer exists.
 */
import { getClosedAt } from '../store/account-closure';
import type { RetryingStoreContext } from '../store/errors';

/** The reason recorded on a delivery ended because its account closed (its attempt's `error`). */
export const ACCOUNT_CLOSED_REASON = 'The account is closed';

/**
 * Whether the account is closed: one consistent GetItem of its closure record (store/account-closure.ts),
 * so a read right after the closure's write sees it.
 */
export async function isAccountClosed(ctx: RetryingStoreContext, userId: string): Promise<boolean> {
  return (await getClosedAt(ctx, userId)) !== undefined;
}
