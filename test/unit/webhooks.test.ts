/**
 * Webhooks out, the parts without I/O: the retry schedule, the payload, the endpoint rule, the secret's
 * form and sealing, the signature headers, and which stream records the worker acts on.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { Webhook } from 'standardwebhooks';
import { TaskStatus } from '../../functions/core/task';
import {
  cancelledByOwner,
  DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES,
  isDelivered,
  newWebhookSecret,
  nextAttemptAt,
  parseRetryDelays,
  refusedAtFirstSend,
  WEBHOOK_RETRY_DELAYS_SECONDS,
  webhookEventOf,
  webhookPayload,
} from '../../functions/core/webhooks';
import { STRICT_SOURCE_POLICY } from '../../functions/media/source-policy';
import { maxOpenDeliveriesFromEnv } from '../../functions/runtime/webhook-lifecycle-from-env';
import { claimedDeliveryOf, endedTaskOf } from '../../functions/webhook-worker/handler';
import { createSecretBox } from '../../functions/webhooks/secret-box';
import { signedHeaders } from '../../functions/webhooks/send';
import { webhookTargetPolicy, webhookUrlProblem } from '../../functions/webhooks/target-policy';
import { WEBHOOK_WORKER_FILTERS } from '../../lib/routes';
import { matchesFilter } from '../../local/stream-poller';

describe('the retry schedule', () => {
  test('eight attempts spread over more than 24 hours, each wait longer than the one before or equal', () => {
    // Prepare
    const delays = WEBHOOK_RETRY_DELAYS_SECONDS;

    // Act
    const total = delays.reduce((sum, delay) => sum + delay, 0);

    // Assert
    expect(delays).toHaveLength(7);
    expect(total).toBeGreaterThanOrEqual(24 * 3600);
    expect(total).toBe(99_360); // 27 h 36 min
    for (let index = 1; index < delays.length; index++) {
      expect(delays[index]).toBeGreaterThanOrEqual(delays[index - 1] ?? 0);
    }
  });

  test('after attempt n the next comes delays[n-1] seconds later; after the last, none', () => {
    // Prepare
    const failedAt = new Date('2026-01-01T00:00:00.000Z');

    // Act
    const afterFirst = nextAttemptAt(1, failedAt, WEBHOOK_RETRY_DELAYS_SECONDS);
    const afterSeventh = nextAttemptAt(7, failedAt, WEBHOOK_RETRY_DELAYS_SECONDS);
    const afterEighth = nextAttemptAt(8, failedAt, WEBHOOK_RETRY_DELAYS_SECONDS);

    // Assert
    expect(afterFirst?.toISOString()).toBe('2026-01-01T00:01:00.000Z');
    expect(afterSeventh?.toISOString()).toBe('2026-01-01T10:00:00.000Z');
    expect(afterEighth).toBeUndefined();
  });

  test('WEBHOOK_RETRY_DELAYS_SECONDS shortens it; unset is the real one; nonsense is refused by name', () => {
    // Act / Assert
    expect(parseRetryDelays('1, 2,3')).toEqual([1, 2, 3]);
    expect(parseRetryDelays(undefined)).toEqual([...WEBHOOK_RETRY_DELAYS_SECONDS]);
    expect(parseRetryDelays('')).toEqual([...WEBHOOK_RETRY_DELAYS_SECONDS]);
    for (const bad of ['0', '-1', '1.5', 'x', '1,,2', '86401']) {
      expect(() => parseRetryDelays(bad)).toThrow(/^WEBHOOK_RETRY_DELAYS_SECONDS must be/);
    }
  });

  test('only a 2xx counts as delivered', () => {
    // Act / Assert
    expect([200, 204, 299].map(isDelivered)).toEqual([true, true, true]);
    expect([undefined, 199, 301, 404, 500].map(isDelivered)).toEqual([false, false, false, false, false]);
  });
});

describe('which ended tasks send an event, and how many deliveries an account may keep open', () => {
  test('a task its owner cancelled sends none; a task that failed otherwise still does', () => {
    // Act
    const verdicts = [
      cancelledByOwner({ status: TaskStatus.FAILED, errorCode: 'CANCELLED' }),
      cancelledByOwner({ status: TaskStatus.FAILED, errorCode: 'TIMEOUT' }),
      cancelledByOwner({ status: TaskStatus.COMPLETED }),
      cancelledByOwner({ status: TaskStatus.PENDING }),
    ];

    // Assert
    expect(verdicts).toEqual([true, false, false, false]);
  });

  test('a task the provider refused at its first send sends none; every other ended task does', () => {
    // Prepare: a task the dispatcher sent once (a 429 before does not count), and one from before it
    const refused = {
      status: TaskStatus.FAILED,
      errorCode: 'PROVIDER_REJECTED' as const,
      attempts: 0,
      stage: 'sending' as const,
    };
    const refusedBeforeDispatcher = { status: TaskStatus.FAILED, errorCode: 'PROVIDER_REJECTED' as const, attempts: 0 };

    // Act
    const verdicts = [
      refusedAtFirstSend(refused),
      // Polls while it was queued claim reads (attempts), never sends.
      refusedAtFirstSend({ ...refused, attempts: 3 }),
      refusedAtFirstSend(refusedBeforeDispatcher),
      refusedAtFirstSend({ ...refused, sendFailures: 1 }),
      refusedAtFirstSend({ ...refused, sendRequeues: 1 }),
      refusedAtFirstSend({ ...refusedBeforeDispatcher, attempts: 1 }),
      refusedAtFirstSend({ ...refused, providerTaskId: 'p-1' }),
      refusedAtFirstSend({ ...refused, errorCode: 'PROVIDER_ERROR' }),
      refusedAtFirstSend({ status: TaskStatus.COMPLETED, attempts: 0 }),
    ];

    // Assert
    expect(verdicts).toEqual([true, true, true, false, false, false, false, false, false]);
  });

  test('WEBHOOK_MAX_OPEN_DELIVERIES: 100 unless set, a whole number from 1, nonsense refused by name', () => {
    // Act
    const unset = maxOpenDeliveriesFromEnv({});
    const set = maxOpenDeliveriesFromEnv({ WEBHOOK_MAX_OPEN_DELIVERIES: ' 5 ' });

    // Assert
    expect(unset).toBe(DEFAULT_WEBHOOK_MAX_OPEN_DELIVERIES);
    expect(unset).toBe(100);
    expect(set).toBe(5);
    for (const bad of ['0', '-1', '2.5', 'many', '100001']) {
      expect(() => maxOpenDeliveriesFromEnv({ WEBHOOK_MAX_OPEN_DELIVERIES: bad })).toThrow(
        /^WEBHOOK_MAX_OPEN_DELIVERIES must be a whole number/,
      );
    }
  });
});

describe('the payload', () => {
  test('names the event by the status and carries the Task resource untouched', () => {
    // Prepare
    const data = {
      taskId: 't1',
      type: 'image' as const,
      status: TaskStatus.FAILED,
      model: 'image-model-1',
      prompt: 'p',
      errorCode: 'PROVIDER_ERROR' as const,
      errorMessage: 'The provider failed',
      creditsUsed: 3,
      creditsRefunded: true,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:05.000Z',
    };

    // Act
    const payload = webhookPayload('task.failed', data.updatedAt, data);

    // Assert
    expect(webhookEventOf(TaskStatus.COMPLETED)).toBe('task.completed');
    expect(webhookEventOf(TaskStatus.FAILED)).toBe('task.failed');
    expect(webhookEventOf(TaskStatus.PENDING)).toBeUndefined();
    expect(payload).toEqual({ type: 'task.failed', timestamp: '2026-01-01T00:00:05.000Z', data });
  });
});

describe('the endpoint rule', () => {
  test.each([
    ['http://hooks.example.com/x', /https/],
    ['https://user:pw@hooks.example.com/x', /credentials/],
    ['https://127.0.0.1/x', /public host/],
    ['https://10.1.2.3/x', /public host/],
    ['https://[::1]/x', /public host/],
    ['https://[fd00:ec2::254]/x', /public host/],
    ['https://203.0.113.9/x', /public host/],
    ['https://localhost/x', /public host/],
    ['https://api.localhost/x', /public host/],
    ['https://printer.local/x', /public host/],
    ['https://metadata/x', /public host/],
    ['https://svc.internal/x', /public host/],
    ['ftp://hooks.example.com/x', /https/],
    ['not a url', /https URL/],
    [`https://hooks.example.com/${'a'.repeat(2048)}`, /2048/],
  ])('%s is refused', (url, why) => {
    // Act
    const problem = webhookUrlProblem(url, STRICT_SOURCE_POLICY);

    // Assert
    expect(problem).toMatch(why);
  });

  test('an https URL on a public host name is allowed, with a port, path and query', () => {
    // Act / Assert
    expect(webhookUrlProblem('https://hooks.example.com:8443/in?x=1', STRICT_SOURCE_POLICY)).toBeUndefined();
  });

  test('plain http only to the exact origins WEBHOOK_INSECURE_ORIGINS names', () => {
    // Prepare
    const policy = webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: 'http://127.0.0.1:4100' });

    // Act / Assert
    expect(webhookUrlProblem('http://127.0.0.1:4100/hook', policy)).toBeUndefined();
    expect(webhookUrlProblem('http://127.0.0.1:4101/hook', policy)).toMatch(/https/);
    expect(() => webhookTargetPolicy({ WEBHOOK_INSECURE_ORIGINS: 'http://127.0.0.1:4100/path' })).toThrow(
      /^WEBHOOK_INSECURE_ORIGINS: /,
    );
  });

  test('the Lambda runtime API and the media allowlist: the first is refused, the second does not apply', () => {
    // Prepare
    const policy = webhookTargetPolicy({
      AWS_LAMBDA_RUNTIME_API: 'runtime.example.com:9001',
      MEDIA_SOURCE_HOSTS: 'cdn.example',
    });

    // Act / Assert
    expect(webhookUrlProblem('https://runtime.example.com:9001/x', policy)).toMatch(/runtime API/);
    expect(webhookUrlProblem('https://hooks.example.com/x', policy)).toBeUndefined();
  });
});

describe('secrets', () => {
  test('a new secret is whsec_ and 32 random bytes in base64, which standardwebhooks takes', () => {
    // Act
    const [one, two] = [newWebhookSecret(), newWebhookSecret()];

    // Assert
    expect(one).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(one.slice(6), 'base64')).toHaveLength(32);
    expect(one).not.toBe(two);
    expect(() => new Webhook(one)).not.toThrow();
  });

  test('sealed for one account, a secret opens for that account only and under that key only', async () => {
    // Prepare
    const box = createSecretBox(async () => 'k'.repeat(40));
    const otherKey = createSecretBox(async () => 'z'.repeat(40));
    const secret = newWebhookSecret();

    // Act
    const sealed = await box.seal('alice', secret);

    // Assert
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain(secret.slice(6, 20));
    await expect(box.open('alice', sealed)).resolves.toBe(secret);
    await expect(box.open('bob', sealed)).rejects.toThrow();
    await expect(otherKey.open('alice', sealed)).rejects.toThrow();
    // A changed ciphertext (its first character carries 6 whole bits) fails the authentication tag.
    const [version, iv, data = '', tag] = sealed.split('.');
    const altered = [version, iv, `${data.startsWith('A') ? 'B' : 'A'}${data.slice(1)}`, tag].join('.');
    await expect(box.open('alice', altered)).rejects.toThrow();
  });

  test('a short service key is refused', async () => {
    // Prepare
    const box = createSecretBox(async () => 'short');

    // Act / Assert
    await expect(box.seal('alice', 'x')).rejects.toThrow(/at least 32 characters/);
  });
});

describe('signed headers', () => {
  test('verify with standardwebhooks, and not once the body changes', () => {
    // Prepare
    const secret = newWebhookSecret();
    const message = { id: 'msg_1', timestamp: new Date(), body: '{"type":"task.completed"}' };

    // Act
    const headers = signedHeaders(message, secret);

    // Assert
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(message.timestamp.getTime() / 1000)),
      'webhook-signature': expect.stringMatching(/^v1,/),
    });
    expect(new Webhook(secret).verify(message.body, headers)).toEqual({ type: 'task.completed' });
    expect(() => new Webhook(secret).verify('{"type":"task.failed"}', headers)).toThrow();
  });
});

describe('the records the webhook worker acts on', () => {
  const taskRecord = (oldStatus: string, newStatus: string): DynamoDBRecord => ({
    eventName: 'MODIFY',
    dynamodb: {
      OldImage: { SK: { S: 'TASK#t1' }, status: { N: oldStatus }, userId: { S: 'u' }, taskId: { S: 't1' } },
      NewImage: { SK: { S: 'TASK#t1' }, status: { N: newStatus }, userId: { S: 'u' }, taskId: { S: 't1' } },
    },
  });
  const deliveryRecord = (eventName: 'INSERT' | 'MODIFY', oldClaim: string | undefined, state: string) => ({
    eventName,
    dynamodb: {
      ...(oldClaim ? { OldImage: { deliveryState: { S: 'sending' }, claimId: { S: oldClaim } } } : {}),
      NewImage: {
        SK: { S: 'WEBHOOK#t1' },
        deliveryState: { S: state },
        claimId: { S: 'c2' },
        userId: { S: 'u' },
        taskId: { S: 't1' },
      },
    },
  });

  test('a task leaving status 0 opens a delivery; other task writes do not', () => {
    // Act / Assert
    expect(endedTaskOf(taskRecord('0', '1'))).toEqual({ userId: 'u', taskId: 't1' });
    expect(endedTaskOf(taskRecord('0', '2'))).toEqual({ userId: 'u', taskId: 't1' });
    expect(endedTaskOf(taskRecord('0', '0'))).toBeUndefined();
    expect(endedTaskOf(taskRecord('1', '1'))).toBeUndefined();
  });

  test('a new claim in state sending makes an attempt; the same claim again or another state does not', () => {
    // Act / Assert
    expect(claimedDeliveryOf(deliveryRecord('INSERT', undefined, 'sending'))).toEqual({
      userId: 'u',
      taskId: 't1',
      claimId: 'c2',
    });
    expect(claimedDeliveryOf(deliveryRecord('MODIFY', 'c1', 'sending'))).toMatchObject({ claimId: 'c2' });
    expect(claimedDeliveryOf(deliveryRecord('MODIFY', 'c2', 'sending'))).toBeUndefined();
    expect(claimedDeliveryOf(deliveryRecord('MODIFY', 'c1', 'waiting'))).toBeUndefined();
  });

  test('the mapping filters (as the local poller applies them) keep exactly those records', () => {
    // Prepare
    const pass = (record: unknown) => WEBHOOK_WORKER_FILTERS.some((filter) => matchesFilter(record, filter));

    // Act / Assert
    expect(pass(taskRecord('0', '1'))).toBe(true);
    expect(pass(taskRecord('0', '2'))).toBe(true);
    expect(pass(taskRecord('0', '0'))).toBe(false);
    expect(pass(deliveryRecord('INSERT', undefined, 'sending'))).toBe(true);
    expect(pass(deliveryRecord('MODIFY', 'c1', 'waiting'))).toBe(false);
  });
});
