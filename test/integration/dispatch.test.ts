/**
 * The dispatcher (functions/lifecycle/dispatch.ts) on real parts: DynamoDB Local, the submit handler,
 * and the mock provider over HTTP with Kie's kind of limit on. The dispatch loop is off: each test drives
 * the steps itself, on a clock it moves, so what is asserted is the order and the count of sends, never
 * a duration.
 */
import { randomUUID } from 'node:crypto';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { DEFAULT_UNKNOWN_OUTCOME_LIMIT_MS } from '../../functions/core/lifecycle';
import { type DispatchSettings, type DispatchStep, dispatchNext } from '../../functions/lifecycle/dispatch';
import { refreshFromCallback, refreshTask } from '../../functions/lifecycle/refresh-task';
import { type LogFields, type Logger, logger } from '../../functions/observability/logger';
import { claimSend, nextQueued, queuedAhead, readCapacity } from '../../functions/store/dispatch';
import { auditUser } from '../../functions/store/ledger';
import * as keys from '../../functions/store/task-keys';
import { getTask } from '../../functions/store/tasks';
import { handler as submitImage } from '../../functions/submit-image/handler';
import { handler as submitVideo } from '../../functions/submit-video/handler';
import {
  imageRequest,
  invoke,
  type ServiceHarness,
  startServiceHarness,
  submitEvent,
  type TestUser,
  videoRequest,
} from '../support/service-harness';

const RATE = { requests: 3, windowSeconds: 10 } as const;
const SETTINGS: DispatchSettings = { createRateLimit: RATE };

describe('the dispatcher', () => {
  let h: ServiceHarness;
  let clock = Date.now();
  const lc = () => h.lifecycle(() => new Date(clock));

  beforeAll(async () => {
    h = await startServiceHarness({
      // Through the conflict layer: DynamoDB's per-item conflicts and per-partition throughput.
      conflicts: { holdMs: 10 },
      dispatcher: false,
      providerLimits: { createRateLimit: RATE },
      providerClock: () => clock,
      maxPendingSeconds: 86_400,
    });
  });

  afterAll(async () => {
    await h.dispose();
  });

  /** Moves the clock past the upstream's window (and never behind the real one, which stamps tasks). */
  const nextWindow = () => {
    clock = Math.max(clock + (RATE.windowSeconds + 1) * 1000, Date.now());
  };

  beforeEach(async () => {
    // Every test starts with nothing queued and an empty window.
    nextWindow();
    for (let step = await dispatchNext(lc(), {}, logger); step.kind !== 'idle'; ) {
      if (step.kind === 'wait') clock += step.waitMs + 1;
      step = await dispatchNext(lc(), {}, logger);
    }
    nextWindow();
    h.provider.stats.reset();
  });

  async function submit(user: TestUser, providerInput: Record<string, unknown> = {}): Promise<string> {
    const answer = await invoke(submitImage, submitEvent('image', user, imageRequest(providerInput)));
    expect(answer.statusCode).toBe(202);
    return String(answer.body.taskId);
  }

  /** `count` steps that are not waits: the clock is moved by each wait the dispatcher asks for. */
  async function steps(count: number): Promise<DispatchStep[]> {
    const done: DispatchStep[] = [];
    while (done.length < count) {
      const step = await dispatchNext(lc(), SETTINGS, logger);
      if (step.kind === 'wait') clock += step.waitMs;
      else done.push(step);
    }
    return done;
  }

  it('sends no more than the declared rate in any window, spread out, and says how long to wait', async () => {
    // Prepare
    const user = await h.createUser(100);
    const taskIds: string[] = [];
    for (let i = 0; i < 7; i++) taskIds.push(await submit(user, { mockDelayMs: 600_000 }));

    // Act: step after step, the clock moved by each wait the dispatcher asks for
    const sentAt: number[] = [];
    const sent: string[] = [];
    const waits: number[] = [];
    for (let step = await dispatchNext(lc(), SETTINGS, logger); step.kind !== 'idle'; ) {
      if (step.kind === 'sent') {
        sent.push(step.taskId);
        sentAt.push(clock);
      }
      if (step.kind === 'wait') {
        waits.push(step.waitMs);
        clock += step.waitMs;
      }
      step = await dispatchNext(lc(), SETTINGS, logger);
    }

    // Assert: in order, each once, never more than 3 in any 10 s, and the provider never refused
    expect(sent).toEqual(taskIds);
    for (const at of sentAt) {
      const inWindow = sentAt.filter((other) => other > at - RATE.windowSeconds * 1000 && other <= at);
      expect(inWindow.length).toBeLessThanOrEqual(RATE.requests);
    }
    expect(waits.length).toBeGreaterThan(0);
    expect(h.provider.stats.createTaskCalls).toBe(7);
    expect(h.provider.stats.createTaskRefused).toBe(0);
    const stored = await getTask(h.store, user.userId, taskIds[0] ?? '');
    expect(stored).toMatchObject({ status: 0, stage: 'running', providerTaskId: expect.any(String) });
  });

  it("takes accounts in turns: a second account's task goes next, whatever the first account's backlog", async () => {
    // Prepare
    const busy = await h.createUser(1000);
    const other = await h.createUser(10);
    const backlog: string[] = [];
    for (let i = 0; i < 6; i++) backlog.push(await submit(busy, { mockDelayMs: 600_000 }));
    const first = await steps(1);
    const otherTask = await submit(other, { mockDelayMs: 600_000 });
    const ahead = async (user: TestUser, taskId: string) =>
      queuedAhead(h.store, {
        userId: user.userId,
        createdAt: (await getTask(h.store, user.userId, taskId))?.createdAt ?? '',
        taskId,
      });

    // Act
    const aheadOfOther = await ahead(other, otherTask);
    const aheadOfLastBacklog = await ahead(busy, backlog[5] ?? '');
    const next = await steps(1);

    // Assert
    expect(first).toEqual([{ kind: 'sent', taskId: backlog[0] }]);
    expect(aheadOfOther).toBe(0);
    expect(aheadOfLastBacklog).toBe(4);
    expect(next).toEqual([{ kind: 'sent', taskId: otherTask }]);
  });

  it('backs every dispatcher off when the provider answers 429, honouring Retry-After, with no retry meanwhile', async () => {
    // Prepare: the dispatcher is not told the limit, so it meets the provider's 429.
    const user = await h.createUser(100);
    const taskIds = [];
    for (let i = 0; i < 4; i++) taskIds.push(await submit(user, { mockDelayMs: 600_000 }));
    for (let i = 0; i < 3; i++) await dispatchNext(lc(), {}, logger);

    // Act
    const refused = await dispatchNext(lc(), {}, logger);
    const callsAfterRefusal = h.provider.stats.createTaskCalls;
    const duringBackoff = await dispatchNext(lc(), {}, logger);
    const capacity = await readCapacity(h.store);

    // Assert
    expect(refused.kind).toBe('wait');
    expect(refused.kind === 'wait' && refused.waitMs).toBeGreaterThanOrEqual(1_000);
    expect(duringBackoff.kind).toBe('wait');
    expect(h.provider.stats.createTaskCalls).toBe(callsAfterRefusal);
    expect(h.provider.stats.createTaskRefused).toBe(1);
    expect(capacity.backoffUntil).toBeGreaterThan(clock);
    const last = await getTask(h.store, user.userId, taskIds[3] ?? '');
    expect(last).toMatchObject({ status: 0, stage: 'queued', creditsRefunded: false });
    expect(last?.providerTaskId).toBeUndefined();
  });

  it("a 503 asking for an hour backs off that model only, up to the bound, and says so; another model's task goes next", async () => {
    // Prepare: every create of the image model answers 503 with Retry-After: 3600; videos are served.
    const user = await h.createUser(100);
    const image = await submit(user, { mockDelayMs: 600_000 });
    const videoAnswer = await invoke(submitVideo, submitEvent('video', user, videoRequest({ mockDelayMs: 600_000 })));
    const video = String(videoAnswer.body.taskId);
    h.provider.setFaults({
      createFault: 'http_503',
      createFaultModel: 'provider/image-model-1',
      faultRetryAfter: '3600',
    });
    const warnings: { message: string; fields?: LogFields }[] = [];
    const capture: Logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (message, fields) => warnings.push({ message, ...(fields ? { fields } : {}) }),
      error: () => undefined,
      child: () => capture,
    };

    // Act
    const refused = await dispatchNext(lc(), SETTINGS, capture);
    const next = await dispatchNext(lc(), SETTINGS, capture);
    const during = await dispatchNext(lc(), SETTINGS, capture);
    const capacity = await readCapacity(h.store);
    const waiting = await getTask(h.store, user.userId, image);
    h.provider.clearFaults();
    clock += 60_000;
    const after = await dispatchNext(lc(), SETTINGS, capture);

    // Assert
    expect(videoAnswer.statusCode).toBe(202);
    expect(refused).toEqual({ kind: 'refused', taskId: image, model: 'image-model-1', waitMs: 60_000 });
    expect(warnings).toContainEqual({
      message: expect.stringContaining('longer Retry-After'),
      fields: { retryAfterSeconds: 3600, honouredSeconds: 60 },
    });
    expect(next).toEqual({ kind: 'sent', taskId: video });
    expect(during.kind).toBe('wait');
    expect(during.kind === 'wait' && during.waitMs).toBeLessThanOrEqual(60_000);
    expect(capacity.modelBackoff['image-model-1']).toEqual({ until: expect.any(Number), ms: 60_000 });
    expect(capacity.backoffUntil ?? 0).toBeLessThanOrEqual(clock - 60_000);
    expect(waiting).toMatchObject({ status: 0, stage: 'queued', sendRefusals: 1, creditsRefunded: false });
    expect(after).toEqual({ kind: 'sent', taskId: image });
  });

  it('refusals across models back the whole service off, as a 429 does', async () => {
    // Prepare: every create answers 503, whatever its model (a maintenance page in front of the upstream).
    const user = await h.createUser(100);
    const image = await submit(user, { mockDelayMs: 600_000 });
    const videoAnswer = await invoke(submitVideo, submitEvent('video', user, videoRequest({ mockDelayMs: 600_000 })));
    const video = String(videoAnswer.body.taskId);
    h.provider.setFaults({ createFault: 'http_503' });

    // Act
    const first = await dispatchNext(lc(), SETTINGS, logger);
    const second = await dispatchNext(lc(), SETTINGS, logger);
    const capacity = await readCapacity(h.store);
    const refusedAt = clock;
    const calls = h.provider.stats.createTaskCalls;
    const during = await dispatchNext(lc(), SETTINGS, logger);
    const callsDuring = h.provider.stats.createTaskCalls - calls;
    h.provider.clearFaults();
    const after = await steps(2);

    // Assert: the first refusal backs its model off only; the second, of another model, everyone
    expect(first).toEqual({ kind: 'refused', taskId: image, model: 'image-model-1', waitMs: 1_000 });
    expect(second).toEqual({ kind: 'wait', waitMs: 1_000 });
    expect(capacity.backoffUntil).toBe(refusedAt + 1_000);
    expect(during.kind).toBe('wait');
    expect(callsDuring).toBe(0);
    expect(after).toEqual(
      expect.arrayContaining([
        { kind: 'sent', taskId: image },
        { kind: 'sent', taskId: video },
      ]),
    );
    expect(await getTask(h.store, user.userId, video)).toMatchObject({ sendRefusals: 1, stage: 'running' });
  });

  it("passes over one account's backlog of a refused model, in bounded reads, to the next account's task", async () => {
    // Prepare: 400 queue entries of the refused model for one account (more than a pass reads), then one
    // entry of another model for the account after it in key order.
    const busy = `aaa-${randomUUID()}`;
    const other = `aab-${randomUUID()}`;
    const entry = (userId: string, index: number, model: string) => {
      const taskId = `t-${index}-${randomUUID()}`;
      const createdAt = new Date(Date.UTC(2026, 10, 27, 0, 0, index)).toISOString();
      return { ...keys.queueEntry(userId, createdAt, taskId), userId, taskId, model };
    };
    const items = [
      ...Array.from({ length: 400 }, (_, index) => entry(busy, index, 'image-model-1')),
      entry(other, 0, 'video-b-2-text-to-video'),
    ];
    const batches = Array.from({ length: Math.ceil(items.length / 25) }, (_, index) =>
      items.slice(index * 25, index * 25 + 25),
    );
    const write = (request: (item: (typeof items)[number]) => Record<string, unknown>) =>
      Promise.all(
        batches.map((batch) =>
          h.store.doc.send(new BatchWriteCommand({ RequestItems: { [h.store.tableName]: batch.map(request) } })),
        ),
      );
    await write((item) => ({ PutRequest: { Item: item } }));

    try {
      // Act
      const refusedPassedOver = await nextQueued(h.store, { limit: 8, excludeModels: ['image-model-1'] });
      const unfiltered = await nextQueued(h.store, { limit: 8 });

      // Assert
      expect(refusedPassedOver.map((ref) => [ref.userId, ref.model])).toEqual([[other, 'video-b-2-text-to-video']]);
      expect(unfiltered.map((ref) => ref.userId)).toEqual(Array.from({ length: 8 }, () => busy));
    } finally {
      await write((item) => ({ DeleteRequest: { Key: { PK: item.PK, SK: item.SK } } }));
    }
  });

  it('a send lost to a crash is never sent again: its outcome is unknown, it leaves the queue and fails refunded at its limit', async () => {
    // Prepare: a task claimed for sending by a dispatcher that then died (maybe after the request went out).
    const user = await h.createUser(100);
    const lost = await submit(user, { mockDelayMs: 600_000 });
    await claimSend(h.store, { userId: user.userId, taskId: lost, now: clock });
    clock += 120_000;

    // Act: a poll (or the sweeper) finds it lost; the dispatcher looks at the queue; the limit passes
    const stored = await getTask(h.store, user.userId, lost);
    const found = stored ? await refreshTask(lc(), stored, logger) : undefined;
    const next = await steps(1);
    clock += DEFAULT_UNKNOWN_OUTCOME_LIMIT_MS + 120_000;
    const unknown = await getTask(h.store, user.userId, lost);
    const ended = unknown ? await refreshTask(lc(), unknown, logger) : undefined;

    // Assert: never sent (no create at all here), out of the queue, then failed and refunded
    expect(found).toMatchObject({ status: 0, stage: 'unknown' });
    expect(next).toEqual([{ kind: 'idle' }]);
    expect(h.provider.stats.createTaskCalls).toBe(0);
    expect(ended).toMatchObject({ status: 2, errorCode: 'PROVIDER_UNAVAILABLE', creditsRefunded: true });
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 100 });
  });

  it('a refused input is failed and refunded exactly once, and leaves the queue', async () => {
    // Prepare
    const user = await h.createUser(10);
    const taskId = await submit(user, { mockOutcome: 'reject' });

    // Act
    const [step, after] = await steps(2);

    // Assert
    expect(step).toEqual({ kind: 'failed', taskId });
    expect(after).toEqual({ kind: 'idle' });
    expect(await getTask(h.store, user.userId, taskId)).toMatchObject({
      status: 2,
      errorCode: 'PROVIDER_REJECTED',
      creditsRefunded: true,
    });
    expect(await auditUser(h.store, user.userId)).toMatchObject({ ok: true, balance: 10 });
  });

  it('a callback that overtakes the answer to createTask is acted on once the provider id is recorded', async () => {
    // Prepare: a provider whose callback arrives while createTask is still answering (a fast task).
    const user = await h.createUser(10);
    const taskId = await submit(user, { mockDelayMs: 0 });
    const real = lc();
    let earlyOutcome: Awaited<ReturnType<typeof refreshFromCallback>> | undefined;
    const overtaken = {
      ...real,
      provider: {
        ...real.provider,
        createTask: async (...args: Parameters<typeof real.provider.createTask>) => {
          const created = await real.provider.createTask(...args);
          const stored = await getTask(h.store, user.userId, taskId);
          if (stored) earlyOutcome = await refreshFromCallback(real, stored, logger);
          return created;
        },
      },
    };

    // Act
    const step = await dispatchNext(overtaken, SETTINGS, logger);

    // Assert: the early callback read nothing and left a note; the dispatcher then read the provider.
    expect(step).toEqual({ kind: 'sent', taskId });
    expect(earlyOutcome?.providerRead).toBe(false);
    const stored = await getTask(h.store, user.userId, taskId);
    expect(stored?.earlyCallbackAt).toEqual(expect.any(Number));
    // The result read: still to copy, or (the media worker on the stream being quicker than this read)
    // copied already.
    expect(stored?.resultsToCopy?.length ?? stored?.resultKeys?.length).toBe(1);
    expect(stored?.lastCallbackReadAt).toEqual(expect.any(Number));
  });

  it('frees a slot one window after the upstream answered its send, not after the slot was taken', async () => {
    // Prepare: the upstream takes 4 s to answer each create (the clock moves while it answers).
    const user = await h.createUser(100);
    for (let i = 0; i < 4; i++) await submit(user, { mockDelayMs: 600_000 });
    const real = lc();
    const slow = {
      ...real,
      provider: {
        ...real.provider,
        createTask: async (...args: Parameters<typeof real.provider.createTask>) => {
          const created = await real.provider.createTask(...args);
          clock += 4_000;
          return created;
        },
      },
    };
    const slotTakenAt = clock;
    for (let i = 0; i < 3; i++) expect((await dispatchNext(slow, SETTINGS, logger)).kind).toBe('sent');

    // Act: the window after the first slot was TAKEN has passed, not the one after it was ANSWERED
    clock = slotTakenAt + RATE.windowSeconds * 1000 + 1_000;
    const early = await dispatchNext(slow, SETTINGS, logger);

    // Assert
    expect(early.kind).toBe('wait');
    expect(early.kind === 'wait' && clock + early.waitMs).toBeGreaterThanOrEqual(
      slotTakenAt + 4_000 + RATE.windowSeconds * 1000,
    );
    expect(h.provider.stats.createTaskCalls).toBe(3);
  });
});
