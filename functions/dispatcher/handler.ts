/**
 * The dispatcher (docs/design/dispatching.md): sends queued tasks to the provider within its
 * declared capacity, accounts taking turns. Deployed it is woken by the table's stream (a task was
 * queued: the event source mapping passes only inserts of queue entries) and by delayed messages on
 * its SQS wake-up queue (capacity freed up); it never sleeps. When it must wait, one conditional write
 * decides which invocation schedules the single wake-up. Locally `local/dispatch-loop.ts` calls the same
 * handler in a loop and waits with a timer for the `waitMs` it answers.
 */
import type { Context } from 'aws-lambda';
import { sendDelayedMessage, sqsDelaySeconds } from '../aws/sqs';
import { parseCreateRateLimit } from '../core/provider-capacity';
import {
  DISPATCH_WAKE_QUEUE_URL,
  type Env,
  PROVIDER_COOL_OFF_MS,
  PROVIDER_CREATE_RATE_LIMIT,
  PROVIDER_MAX_IN_FLIGHT,
  PROVIDER_MAX_REFUSALS_PER_TASK,
  PROVIDER_MAX_RETRY_AFTER_SECONDS,
  PROVIDER_MIN_BACKOFF_MS,
  readEnv,
  WEBHOOK_MAX_OPEN_DELIVERIES,
} from '../environment/environment';
import { noticeSpending } from '../lifecycle/account-events';
import type { DispatchSettings } from '../lifecycle/dispatch';
import { type DispatchRun, dispatchQueued } from '../lifecycle/dispatch-run';
import type { DispatchUpstream } from '../lifecycle/dispatch-upstreams';
import type { ProviderLifecycle } from '../lifecycle/lifecycle';
import { uploadReaderFromEnv } from '../media/uploads';
import { logger, withInvocation } from '../observability/logger';
import { metrics } from '../observability/metrics';
import { dispatchUpstreamsFromEnv } from '../runtime/dispatch-upstreams-from-env';
import { providerLifecycleFromEnv, withMaxInFlightFromEnv } from '../runtime/provider-lifecycle-from-env';
import { providerProfileFromEnv } from '../runtime/provider-profile-from-env';
import { claimWake, readCapacity } from '../store/dispatch';

/** Leaves this much of the Lambda's time unused so sends in flight can finish. */
const SAFETY_MARGIN_MS = 10_000;

/**
 * The dispatcher's settings from `PROVIDER_CREATE_RATE_LIMIT` and `PROVIDER_MAX_IN_FLIGHT` (checked at
 * synth and at start), `PROVIDER_MAX_RETRY_AFTER_SECONDS`, `PROVIDER_MAX_REFUSALS_PER_TASK`,
 * `PROVIDER_MIN_BACKOFF_MS` and `PROVIDER_COOL_OFF_MS` (the code's defaults when unset).
 */
export function dispatchSettingsFromEnv(env?: Env): DispatchSettings {
  const text = readEnv(PROVIDER_CREATE_RATE_LIMIT, env);
  const maxInFlight = readEnv(PROVIDER_MAX_IN_FLIGHT, env);
  const maxRetryAfterSeconds = readEnv(PROVIDER_MAX_RETRY_AFTER_SECONDS, env);
  const maxRefusalsPerTask = readEnv(PROVIDER_MAX_REFUSALS_PER_TASK, env);
  const minBackoffMs = readEnv(PROVIDER_MIN_BACKOFF_MS, env);
  const coolOffMs = readEnv(PROVIDER_COOL_OFF_MS, env);
  return {
    ...(text === undefined ? {} : { createRateLimit: parseCreateRateLimit(text, PROVIDER_CREATE_RATE_LIMIT.name) }),
    ...(maxInFlight === undefined ? {} : { maxInFlight }),
    ...(maxRetryAfterSeconds === undefined ? {} : { maxRetryAfterSeconds }),
    ...(maxRefusalsPerTask === undefined ? {} : { maxRefusalsPerTask }),
    ...(minBackoffMs === undefined ? {} : { minBackoffMs }),
    ...(coolOffMs === undefined ? {} : { coolOffMs }),
  };
}

/**
 * The provider lifecycle plus the uploads (UPLOADS_BUCKET, read per run: the local stack changes it
 * between runs) and the provider profile: the dispatcher is the one function that sends, so the one
 * that builds each provider request and signs each upload's short-lived GET URL for the provider.
 */
function dispatcherLifecycle(): ProviderLifecycle {
  const uploads = uploadReaderFromEnv();
  // The profile builds each provider request at the send (lifecycle/send-to-provider.ts).
  const lc = { ...providerLifecycleFromEnv(), profile: providerProfileFromEnv() };
  return uploads ? { ...lc, uploads } : lc;
}

type DispatcherContext = Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>;

/** What the dispatcher answers: no failed items (every task stays in the table's queue), and its run. */
export interface DispatcherResult extends DispatchRun {
  batchItemFailures: [];
}

async function dispatch(_event: unknown, context?: DispatcherContext): Promise<DispatcherResult> {
  const log = logger.child({ function: 'dispatcher' });
  const base = dispatcherLifecycle();
  // Its own failures (refused inputs) are finishes too: a task sent under the cap leaves the count.
  const lc = { ...base, config: withMaxInFlightFromEnv(base.config) };
  const maxOpenDeliveries = readEnv(WEBHOOK_MAX_OPEN_DELIVERIES);
  const events = { store: lc.store, now: lc.now, ...(maxOpenDeliveries ? { maxOpenDeliveries } : {}) };
  const settings = dispatchSettingsFromEnv();
  // With an upstreams list, each step goes over them (docs/guides/upstreams.md).
  const upstreams = lc.profile ? dispatchUpstreamsFromEnv(lc.profile, settings) : undefined;
  const run = await dispatchQueued(lc, settings, log, {
    ...(upstreams ? { upstreams } : {}),
    hasTime: () => (context ? context.getRemainingTimeInMillis() > SAFETY_MARGIN_MS : true),
    // Every accepted task is claimed here once, after its accept: the place that sees every spending
    // off the request path, so the account events are noticed here (lifecycle/account-events.ts).
    onClaimed: (task) => noticeSpending(events, task, log),
  });
  const queueUrl = readEnv(DISPATCH_WAKE_QUEUE_URL);
  if (run.waitMs !== undefined && queueUrl) {
    const now = lc.now().getTime();
    // What SQS is actually asked for (whole seconds, at most 900): a longer wait is chained, the run
    // woken then asks again for what is left. Recording the whole wait instead would leave a `wakeAt`
    // later than the delivery, and that woken run's claim below would fail: no wake-up after it.
    const delaySeconds = sqsDelaySeconds(run.waitMs);
    const at = now + delaySeconds * 1000;
    // One wake-up per moment: only the invocation that wins this write sends the message.
    if (await claimWake(lc.store, { at, now })) {
      await sendDelayedMessage({ queueUrl, body: JSON.stringify({ wakeAt: at }), delaySeconds });
    }
  }
  // The alarm on the queue's age reads this (lib/constructs/service-observability.ts).
  if (run.oldestQueuedAgeMs !== undefined) metrics.dispatchQueueAge(run.oldestQueuedAgeMs);
  if (upstreams) await reportUpstreamsOut(lc, upstreams, log);
  log.info('Dispatch finished', { ...run });
  return { batchItemFailures: [], ...run };
}

/**
 * How long each upstream has been out, after every run: the alarm on an upstream out for minutes reads
 * it (lib/constructs/upstream-alarms.ts). One read of each upstream's capacity item.
 */
async function reportUpstreamsOut(
  lc: ProviderLifecycle,
  upstreams: readonly DispatchUpstream[],
  log: ReturnType<typeof logger.child>,
): Promise<void> {
  const now = lc.now().getTime();
  await Promise.all(
    upstreams.map(async ({ name }) => {
      const state = await readCapacity({ ...lc.store, upstream: name });
      metrics.upstreamOut(name, state.unhealthySince === undefined ? 0 : (now - state.unhealthySince) / 1000);
    }),
  ).catch((error: unknown) => log.warn('Could not read the upstreams for their health', { error }));
}

/** The Lambda entry (stream records and SQS wake-ups alike: both only say "look at the queue"). */
export const handler: (event: unknown, context?: DispatcherContext) => Promise<DispatcherResult> = withInvocation(
  dispatch,
  (_event, context) => context?.awsRequestId,
);
