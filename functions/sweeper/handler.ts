/**
 * Scheduled (EventBridge, every minute): drives every pending task to a terminal state, and claims the
 * webhook deliveries whose next attempt is due (the webhook worker then makes them), and gives back the
 * API Gateway keys of ended API keys (functions/auth/key-issuing.ts), and removes the results of tasks
 * whose own retention ended (lifecycle/expire-results.ts).
 */
import type { Context } from 'aws-lambda';
import { reconcileGatewayKeys } from '../auth/key-issuing';
import { usageEnrollmentFromEnv } from '../auth/rate-limits';
import { sendDelayedMessage } from '../aws/sqs';
import { DISPATCH_WAKE_QUEUE_URL, readEnv } from '../environment/environment';
import { expireResults } from '../lifecycle/expire-results';
import { type SweepReport, sweepPendingTasks } from '../lifecycle/sweep';
import { claimDueDeliveries } from '../lifecycle/webhooks';
import { type Logger, logger, withInvocation } from '../observability/logger';
import { removalFromEnv } from '../runtime/removal-from-env';
import { workerLifecycleFromEnv } from '../runtime/worker-lifecycle-from-env';

/** Leaves this much of the Lambda's time unused so in-flight refreshes can finish. */
const SAFETY_MARGIN_MS = 15_000;

/** Deployed: the stack's usage plans, whose keys of ended API keys the sweeper deletes. */
const enrollment = usageEnrollmentFromEnv();

/**
 * Wakes the dispatcher (an undelayed message on its wake-up queue) when the walk saw tasks queued for
 * more than a few seconds, whose wake-up may have been lost. A run with a wake-up pending finds it
 * claimed and schedules no second one.
 * @returns whether a wake-up was sent
 */
async function wakeDispatcher(report: SweepReport, log: Logger): Promise<boolean> {
  const queueUrl = readEnv(DISPATCH_WAKE_QUEUE_URL);
  if (!queueUrl || report.queuedStale === 0) return false;
  try {
    await sendDelayedMessage({
      queueUrl,
      body: JSON.stringify({ wakeAt: Date.now(), by: 'sweeper' }),
      delaySeconds: 0,
    });
    return true;
  } catch (error) {
    log.error('Waking the dispatcher failed; the next sweep tries again', { error });
    return false;
  }
}

type SweeperContext = Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>;

async function sweep(_event: unknown, context?: SweeperContext) {
  const log = logger.child({ function: 'sweeper' });
  const lc = workerLifecycleFromEnv();
  const [report, webhooksClaimed, gatewayKeys, retention] = await Promise.all([
    sweepPendingTasks(lc, log, {
      hasTime: () => (context ? context.getRemainingTimeInMillis() > SAFETY_MARGIN_MS : true),
    }),
    // Only claims (a write each): the sending happens in the webhook worker, never here.
    claimDueDeliveries(lc.store, lc.now(), log).catch((error: unknown) => {
      log.error('Claiming due webhook deliveries failed; the next sweep tries again', { error });
      return 0;
    }),
    // API Gateway keys of ended keys (and of issuings a crash interrupted): given back or enrolled.
    reconcileGatewayKeys(lc.store, enrollment, lc.now(), log).catch((error: unknown) => {
      log.error('Reconciling API Gateway keys failed; the next sweep tries again', { error });
      return { deleted: 0, enrolled: 0 };
    }),
    // Results whose own retention (resultRetention) ended: removed as a delete removes them; and the tasks
    // a closed account still had at the provider, once they ended: deleted whole.
    expireResults({ ...removalFromEnv(), store: lc.store, now: lc.now }, log).catch((error: unknown) => {
      log.error('Expiring results failed; the next sweep tries again', { error });
      return { expired: 0, deleted: 0, dropped: 0, waiting: 0, errors: 1 };
    }),
  ]);
  const dispatcherWoken = await wakeDispatcher(report, log);
  log.info('Sweep finished', { ...report, webhooksClaimed, gatewayKeys, retention, dispatcherWoken });
  const idle = foundNothing(report, webhooksClaimed, gatewayKeys, retention);
  return { ...report, webhooksClaimed, gatewayKeys, retention, dispatcherWoken, idle };
}

/**
 * Whether a sweep found nothing at all to look at: no pending task, no delivery claimed, no API Gateway
 * key and no result retention entry due, no error. The local stack's timer sweeps less often after such
 * sweeps (local/scheduled-runs.ts); deployed, EventBridge's schedule ignores it.
 */
function foundNothing(
  report: SweepReport,
  webhooksClaimed: number,
  gatewayKeys: { deleted: number; enrolled: number; busy?: number },
  retention: { expired: number; dropped: number; waiting: number; errors: number },
): boolean {
  const counts = [
    report.seen,
    report.errors,
    report.queuedStale,
    webhooksClaimed,
    gatewayKeys.deleted,
    gatewayKeys.enrolled,
    gatewayKeys.busy ?? 0,
    retention.expired,
    retention.dropped,
    retention.waiting,
    retention.errors,
  ];
  return !report.truncated && counts.every((count) => count === 0);
}

export const handler = withInvocation(sweep, (_event, context) => context?.awsRequestId);
