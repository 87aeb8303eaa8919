/**
 * The deployed driver's own rules (local/deployed-driver.ts), as AWS documents them: the wake-up queue
 * takes `DelaySeconds` only as a whole number from 0 to 900 (SQS's message timers), its event source
 * keeps to the mapping's maximum concurrency, and a message the function reports in `batchItemFailures`
 * comes back after the visibility timeout while the others are deleted. The queue is reached through the
 * SQS SDK client over HTTP; the invoked function is a recording stand-in, since what is under test is
 * what invokes it. The table (its stream) is on DynamoDB Local.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { DISPATCHER } from '../../lib/event-lambdas';
import { type DeployedDriver, type PacedResult, startDeployedDriver } from '../../local/deployed-driver';
import { createTestStore, type TestStore } from '../support/dynamodb';
import { testEndpoint } from '../support/shared-dynamodb';

const IDLE: PacedResult = { batchItemFailures: [] };

describe('the deployed driver', () => {
  let store: TestStore;
  let driver: DeployedDriver;
  let sqs: SQSClient;
  /** What the stand-in function does with each SQS batch; replaced per test. */
  let onBatch: (event: SQSEvent) => Promise<PacedResult> = async () => IDLE;

  beforeAll(async () => {
    store = await createTestStore({ stream: true });
    driver = await startDeployedDriver({
      endpoint: testEndpoint(),
      tableName: store.tableName,
      // A visibility timeout (the function's 120 s) of 120 ms.
      secondMs: 1,
      // Only the queue's batches concern these tests; the table is never written, its stream stays empty.
      handler: async (event) => (event.Records.some((record) => 'body' in record) ? onBatch(event as SQSEvent) : IDLE),
    });
    sqs = new SQSClient({
      region: 'local',
      endpoint: driver.sqsEndpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
  });

  afterAll(async () => {
    sqs?.destroy();
    await driver?.stop();
    await store?.dispose();
  });

  const send = (body: string, delaySeconds?: number) =>
    sqs.send(
      new SendMessageCommand({
        QueueUrl: driver.queueUrl,
        MessageBody: body,
        ...(delaySeconds === undefined ? {} : { DelaySeconds: delaySeconds }),
      }),
    );

  async function until(condition: () => boolean, budgetMs = 60_000): Promise<boolean> {
    const deadline = Date.now() + budgetMs;
    while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    return condition();
  }

  test('the queue refuses a delay over 900 s or not in whole seconds, as SQS does, and takes 900', async () => {
    // Act
    const over = await send('over', 901).catch((error: Error) => error);
    const fraction = await send('fraction', 1.5).catch((error: Error) => error);
    const longest = await send('longest', 900);

    // Assert
    expect(over).toMatchObject({ name: 'InvalidParameterValue' });
    expect(fraction).toMatchObject({ name: 'InvalidParameterValue' });
    expect(longest.MessageId).toEqual(expect.any(String));
    expect(driver.sent().map((message) => message.body)).toContain('longest');
    expect(driver.sent().map((message) => message.body)).not.toContain('over');
  });

  test("the queue's event source runs at most the mapping's maximum concurrency at once", async () => {
    // Prepare: each invocation waits until the test lets it go.
    let running = 0;
    let most = 0;
    let handled = 0;
    const gates: Array<() => void> = [];
    onBatch = async (event) => {
      // The 900 s message of the test before may come due meanwhile: only this test's wake-ups count.
      if (!event.Records.every((record) => record.body.startsWith('wake-'))) return IDLE;
      running += 1;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running -= 1;
      handled += 1;
      return IDLE;
    };

    // Act
    for (let i = 0; i < 5; i++) await send(`wake-${i}`, 0);
    const reachedCap = await until(() => running === DISPATCHER.wakeConcurrency);
    while (handled < 5 && (await until(() => gates.length > 0 || handled === 5))) gates.shift()?.();

    // Assert
    expect(reachedCap).toBe(true);
    expect(handled).toBe(5);
    expect(most).toBe(DISPATCHER.wakeConcurrency);
  });

  test('a message reported in batchItemFailures comes back after the visibility timeout; one handled is deleted', async () => {
    // Prepare: the first receive of "retry" reports it failed; everything else succeeds.
    const receives: Array<{ body: string; count: string }> = [];
    onBatch = async (event) => {
      const failures = event.Records.flatMap((record) => {
        receives.push({ body: record.body, count: record.attributes.ApproximateReceiveCount });
        return record.body === 'retry' && record.attributes.ApproximateReceiveCount === '1'
          ? [{ itemIdentifier: record.messageId }]
          : [];
      });
      return { batchItemFailures: failures };
    };

    // Act
    await send('retry', 0);
    await send('once', 0);
    const retried = await until(() => receives.some((r) => r.body === 'retry' && r.count === '2'));

    // Assert
    expect(retried).toBe(true);
    expect(receives.filter((r) => r.body === 'once')).toEqual([{ body: 'once', count: '1' }]);
  });
});
