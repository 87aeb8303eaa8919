/**
 * The submit endpoint for one account under load, through the real handlers, with DynamoDB's per-item
 * transaction conflicts modelled (the conflict-faithful layer): every submit in a burst is accepted
 * (a 503 retried with its Idempotency-Key),
 * an ended key cannot spend behind a cached Allow, and contention that retrying cannot win is a 503.
 */
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { revokeApiKey } from '../../functions/money/key-end';
import { putApiKey } from '../../functions/money/key-issue';
import { auditUser, listLedger } from '../../functions/store/ledger';
import { TABLE } from '../../functions/store/table';
import * as keys from '../../functions/store/task-keys';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { untilForwarded } from '../support/dynamodb';
import {
  type ApiAnswer,
  IMAGE_COST,
  imageRequest,
  invoke,
  type ServiceHarness,
  startServiceHarness,
  submitEvent,
} from '../support/service-harness';

const LONG_DELAY = { mockDelayMs: 600_000 };

describe('one account through the submit handler, conflicts modelled (10 ms hold)', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    // Accepts are the subject: the dispatcher, which sends the tasks afterwards, is left out.
    h = await startServiceHarness({ conflicts: { holdMs: 10 }, dispatcher: false });
  });

  afterAll(async () => {
    await h.dispose();
  });

  it('accepts every one of 32 submits in flight on one account, a 503 retried as the README says, money exact', async () => {
    // Prepare: each submit carries an Idempotency-Key; a 503 ("busy": the store's retries lost every
    // shard, which a loaded machine makes likelier) is sent again with the same key, as docs/api/errors.md tells
    // callers to. How many 503s there are depends on timing, so only what each must hold is asserted.
    const user = await h.createUser(1000);
    const busyAnswers: ApiAnswer[] = [];
    const submitUntilAccepted = async (index: number) => {
      const headers = { 'Content-Type': 'application/json', 'Idempotency-Key': `burst-${index}` };
      for (let round = 1; ; round++) {
        const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(LONG_DELAY), headers));
        if (answer.statusCode !== 503 || round >= 20) return answer;
        busyAnswers.push(answer);
      }
    };

    // Act
    const answers = await Promise.all(Array.from({ length: 32 }, (_, index) => submitUntilAccepted(index)));

    // Assert
    expect(answers.map((answer) => answer.statusCode)).toEqual(Array(32).fill(202));
    expect(new Set(answers.map((answer) => answer.body.taskId)).size).toBe(32);
    for (const busy of busyAnswers) {
      expect(busy.body).toEqual({ error: 'Service busy, retry later' });
      expect(busy.headers['Retry-After']).toBe('1');
    }
    const debits = (await listLedger(h.store, user.userId)).filter((entry) => entry.kind === 'debit');
    expect(debits).toHaveLength(32);
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 1000 - 32 * IMAGE_COST });
  });

  it('refuses a submit with a revoked key behind a cached Allow: 401, no debit', async () => {
    // Prepare: the authorizer allowed this key a moment ago (its context is what API Gateway caches).
    const user = await h.createUser(30);
    const key = await putApiKey(h.store, { userId: user.userId, name: 'soon revoked' });
    const cachedAllow = { userId: user.userId, keyId: key.keyId };
    const before = await invoke(submitImage, submitEvent('image', cachedAllow, imageRequest(LONG_DELAY)));
    await revokeApiKey(h.store, { keyId: key.keyId });

    // Act
    const after = await invoke(submitImage, submitEvent('image', cachedAllow, imageRequest(LONG_DELAY)));

    // Assert
    expect(before.statusCode).toBe(202);
    expect(after.statusCode).toBe(401);
    expect(after.body).toEqual({ error: 'Unauthorized' });
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 30 - IMAGE_COST, entries: 2 });
  });
});

describe('contention that retrying cannot win', () => {
  let h: ServiceHarness;

  beforeAll(async () => {
    // A hold far longer than the store's whole retry budget (about 3 s of backoff in the worst case).
    h = await startServiceHarness({ conflicts: { holdMs: 9_000 }, dispatcher: false });
  });

  afterAll(async () => {
    await h.dispose();
  });

  it('answers 503 with Retry-After and { error }, never 500, and debits nothing', async () => {
    // Prepare: one transaction holds every balance shard of the account for the whole hold.
    const user = await h.createUser(30);
    const forwarded = h.store.conflicts?.stats().forwardedTransactions ?? 0;
    const holdAll = h.store.doc.send(
      new TransactWriteCommand({
        TransactItems: Array.from({ length: TABLE.balanceShards }, (_, shard) => ({
          ConditionCheck: {
            TableName: h.store.tableName,
            Key: keys.balanceShard(user.userId, shard),
            ConditionExpression: 'attribute_exists(PK) OR attribute_not_exists(PK)',
          },
        })),
      }),
    );
    // The layer holds them now (not "after 200 ms", which a loaded machine may not have met).
    await untilForwarded(h.store, forwarded + 1);

    // Act
    const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(LONG_DELAY)));
    await holdAll;

    // Assert
    expect(answer.statusCode).toBe(503);
    expect(answer.headers['Retry-After']).toBe('1');
    expect(answer.body).toEqual({ error: 'Service busy, retry later' });
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 30, entries: 1 });
  });
});
