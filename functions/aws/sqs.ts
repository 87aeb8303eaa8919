/**
 * SQS through its SDK client: one `SendMessage`, used by the dispatcher (off the request path, where a
 * full SDK client is the well-kept way) to schedule its own wake-up with a delivery delay. The endpoint
 * follows the SDK's own settings (`AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL`: LocalStack).
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { observeClient } from '../core/aws-call-observer';

/** SQS's longest delivery delay. */
export const MAX_DELAY_SECONDS = 900;

let client: SQSClient | undefined;

/** One client per Lambda container, made on first use. */
function defaultClient(): SQSClient {
  if (!client) {
    client = new SQSClient({});
    observeClient('sqs', client);
  }
  return client;
}

/**
 * Forgets the client made on first use, so the next send reads the SDK's settings again: the local
 * stack and the tests' harness point `AWS_ENDPOINT_URL_SQS` at a queue of their own (local/deployed-driver.ts).
 */
export function resetSqsClient(): void {
  client?.destroy();
  client = undefined;
}

/**
 * The delivery delay SQS is asked for to wake at least `ms` from now: whole seconds (SQS's unit),
 * rounded up so a wake-up never comes early, within 0 to {@link MAX_DELAY_SECONDS}. A longer wait is
 * a chain of such delays: whoever wakes at the end of one asks again for what is left.
 */
export function sqsDelaySeconds(ms: number): number {
  return Math.min(Math.max(Math.ceil(ms / 1000), 0), MAX_DELAY_SECONDS);
}

/**
 * Sends `body` to the queue at `queueUrl`, delivered after `delaySeconds`, rounded up to whole seconds
 * (SQS's unit) and kept within 0-900.
 */
export async function sendDelayedMessage(
  input: { queueUrl: string; body: string; delaySeconds: number },
  sqs: SQSClient = defaultClient(),
): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: input.queueUrl,
      MessageBody: input.body,
      DelaySeconds: sqsDelaySeconds(input.delaySeconds * 1000),
    }),
  );
}
