/**
 * GET /api/ai/credits?limit=&cursor=: the caller's balance and ledger, newest first. Every entry is a
 * grant, a debit or a refund; debits and refunds name their task. The balance is the sum of the whole
 * ledger (the store keeps both in one transaction).
 */
import { apiHandler } from '../http/api-handler';
import { parsePageQuery } from '../http/page-query';
import { getBalance } from '../store/accounts';
import { storeFromEnv } from '../store/from-env';
import { decodeLedgerCursor, listLedgerPage } from '../store/ledger';

export const handler = apiHandler({ jsonBody: false }, async (req) => {
  const page = parsePageQuery(req.query, decodeLedgerCursor);
  const store = storeFromEnv();
  const userId = req.caller.userId;
  const [balance, ledger] = await Promise.all([getBalance(store, userId), listLedgerPage(store, userId, page)]);
  const entries = ledger.items.map(({ userId: _owner, ...entry }) => entry);
  return { statusCode: 200, body: { balance, entries, next: ledger.next ?? null } };
});
