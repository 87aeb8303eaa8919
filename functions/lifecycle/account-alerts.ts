/**
 * The account's alert settings (docs/api/webhooks.md, account events): its low-balance threshold, below
 * which `credits.low` is sent once per crossing. The session route (`/api/account/alerts`) and the
 * operator CLI (`alerts ...`) share these.
 */
import type { AccountAlertsView } from '../core/account-events';
import { type AccountAlerts, getAccountAlerts, setLowBalanceThreshold } from '../store/account-events';
import type { StoreContext } from '../store/client';

/** The settings as the API and the CLI show them. */
export function describeAccountAlerts(alerts: AccountAlerts): AccountAlertsView {
  return { lowBalanceThreshold: alerts.lowBalanceThreshold ?? null, lowBalanceSent: alerts.lowBalanceSent };
}

/** The account's alert settings. */
export async function showAccountAlerts(store: StoreContext, userId: string): Promise<AccountAlertsView> {
  return describeAccountAlerts(await getAccountAlerts(store, userId));
}

/**
 * Sets (a whole number of credits, checked by the caller) or removes (null) the low-balance threshold;
 * either way `credits.low` is re-armed, so a balance already below a new threshold sends it once.
 */
export async function setAccountAlerts(
  store: StoreContext,
  input: { userId: string; lowBalanceThreshold: number | null; now: Date },
): Promise<AccountAlertsView> {
  return describeAccountAlerts(
    await setLowBalanceThreshold(store, { userId: input.userId, threshold: input.lowBalanceThreshold, now: input.now }),
  );
}
