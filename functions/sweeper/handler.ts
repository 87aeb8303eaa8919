/**
 * Scheduled (EventBridge, every minute): drives every pending task to a terminal state.
 */
import type { Context } from 'aws-lambda';
import { sweepPendingTasks } from '../lifecycle/sweep';
import { logger, withInvocation } from '../observability/logger';
import { workerLifecycleFromEnv } from '../runtime/worker-lifecycle-from-env';

/** Leaves this much of the Lambda's time unused so in-flight refreshes can finish. */
const SAFETY_MARGIN_MS = 15_000;

type SweeperContext = Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>;

async function sweep(_event: unknown, context?: SweeperContext) {
  const log = logger.child({ function: 'sweeper' });
  const report = await sweepPendingTasks(workerLifecycleFromEnv(), log, {
    hasTime: () => (context ? context.getRemainingTimeInMillis() > SAFETY_MARGIN_MS : true),
  });
  log.info('Sweep finished', { ...report });
  return report;
}

export const handler = withInvocation(sweep, (_event, context) => context?.awsRequestId);
