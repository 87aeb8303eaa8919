/**
 * Scheduled (EventBridge, every minute): drives every pending task to a terminal state.
 */
import type { Context } from 'aws-lambda';
import { sweepPendingTasks } from '../lifecycle/sweep';
import { logger } from '../observability/logger';
import { lifecycleFromEnv } from '../runtime/lifecycle-from-env';

/** Leaves this much of the Lambda's time unused so in-flight refreshes can finish. */
const SAFETY_MARGIN_MS = 15_000;

export const handler = async (
  _event: unknown,
  context?: Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>,
) => {
  const log = logger.child({ requestId: context?.awsRequestId, function: 'sweeper' });
  const report = await sweepPendingTasks(lifecycleFromEnv(), log, {
    hasTime: () => (context ? context.getRemainingTimeInMillis() > SAFETY_MARGIN_MS : true),
  });
  log.info('Sweep finished', { ...report });
  return report;
};
