/**
 * The health and the counters of each upstream (docs/guides/upstreams.md). Health lives on the
 * upstream's capacity item (every dispatch step reads it anyway): an upstream whose sends fail (5xx,
 * unreachable, a timeout) is out, cooling off until `backoffUntil`, then probed back with a single
 * send; the first send it answers brings it back. The counters (sends, refusals, failures, the recent
 * create latencies) live on an item of their own per upstream, so counting never contends with the
 * versioned writes that take slots.
 */
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { DEFAULT_UPSTREAM } from '../core/upstreams';
import * as conditions from './condition-fragments';
import { attr, namesOf, withCondition, withKeyCondition } from './conditions';
import { type CapacityContext, updateCapacity } from './dispatch-capacity';
import { type RetryingStoreContext, withRetry } from './errors';
import { TABLE } from './table';

/**
 * Takes the upstream out until `until` (a cool-off of `ms`, doubled by the caller while failures
 * repeat): sets the backoff every dispatcher honours and, unless already out, `unhealthySince`. A
 * backoff that reaches further is kept.
 */
export async function markUnhealthy(
  ctx: CapacityContext,
  input: { now: number; until: number; ms: number },
): Promise<void> {
  await updateCapacity(
    ctx,
    withCondition(
      {
        UpdateExpression: 'SET #until = :until, #ms = :ms, #since = if_not_exists(#since, :now)',
        ExpressionAttributeNames: { '#until': 'backoffUntil', '#ms': 'backoffMs', '#since': 'unhealthySince' },
        ExpressionAttributeValues: { ':until': input.until, ':ms': input.ms, ':now': input.now },
      },
      conditions.backoffEndsBefore(input.until),
    ),
  );
}

/** The upstream answered a send (its probe, or any send): it is back in. */
export async function markHealthy(ctx: CapacityContext): Promise<void> {
  await updateCapacity(
    ctx,
    withCondition(
      { UpdateExpression: 'REMOVE #since', ExpressionAttributeNames: { '#since': 'unhealthySince' } },
      conditions.upstreamUnhealthy(),
    ),
  );
}

/** The latencies kept per upstream for its p50: the last this many creates. */
export const LATENCY_SAMPLES = 32;

/** What one send ended as, for the counters. */
export type SendOutcome = 'sent' | 'refused' | 'failed';

const statsKey = (upstream: string) => ({ PK: 'DISPATCH#UPSTREAMS', SK: `STATS#${upstream}` });

/**
 * Counts one send of `upstream`: its outcome, and the create's latency into a ring of
 * {@link LATENCY_SAMPLES} (`lat<i>`). Not versioned; a lost count costs only a figure.
 */
export async function countSend(
  ctx: RetryingStoreContext,
  input: { upstream: string; outcome: SendOutcome; latencyMs: number; now: number },
): Promise<void> {
  const counter = input.outcome === 'sent' ? 'sends' : input.outcome === 'refused' ? 'refusals' : 'failures';
  // The slot of the ring is picked by time: no read needed, and near-simultaneous sends spread.
  const slot = `lat${Math.floor(input.now / 7) % LATENCY_SAMPLES}`;
  await withRetry(
    () =>
      ctx.doc.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: statsKey(input.upstream),
          UpdateExpression: 'ADD #counter :one SET #slot = :ms, #at = :now',
          ExpressionAttributeNames: { '#counter': counter, '#slot': slot, '#at': 'lastAt' },
          ExpressionAttributeValues: { ':one': 1, ':ms': Math.round(input.latencyMs), ':now': input.now },
        }),
      ),
    ctx.retry,
  );
}

/** An upstream's counters as read. */
export interface UpstreamStats {
  sends: number;
  refusals: number;
  failures: number;
  /** The median of the recent create latencies (ms); undefined before the first. */
  p50CreateMs?: number;
}

/** Reads the counters of `upstream` (zeros before its first send). */
export async function readUpstreamStats(ctx: RetryingStoreContext, upstream: string): Promise<UpstreamStats> {
  const out = await withRetry(
    () => ctx.doc.send(new GetCommand({ TableName: ctx.tableName, Key: statsKey(upstream), ConsistentRead: true })),
    ctx.retry,
  );
  const item = out.Item ?? {};
  const number = (value: unknown) => (typeof value === 'number' ? value : 0);
  const latencies = Object.entries(item)
    .filter(([name, value]) => /^lat\d+$/.test(name) && typeof value === 'number')
    .map(([, value]) => value as number)
    .sort((a, b) => a - b);
  const middle = latencies[Math.floor((latencies.length - 1) / 2)];
  return {
    sends: number(item.sends),
    refusals: number(item.refusals),
    failures: number(item.failures),
    ...(middle === undefined ? {} : { p50CreateMs: middle }),
  };
}

/**
 * The upstreams that have a capacity item: `default` for the one upstream of a deployment without a
 * list (`CREATE`), each listed upstream by its name (`CREATE#<name>`). One `Query` of the keys only.
 */
export async function upstreamsWithCapacity(ctx: RetryingStoreContext): Promise<string[]> {
  const names: string[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await withRetry(
      () =>
        ctx.doc.send(
          new QueryCommand({
            TableName: ctx.tableName,
            ...withKeyCondition(
              { ExpressionAttributeNames: namesOf(TABLE.sortKey) },
              conditions.partitionIs('DISPATCH#CAPACITY'),
              conditions.sortKeyBeginsWith('CREATE'),
            ),
            ProjectionExpression: attr(TABLE.sortKey),
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      ctx.retry,
    );
    for (const item of out.Items ?? []) {
      const sk = String(item.SK);
      names.push(sk === 'CREATE' ? DEFAULT_UPSTREAM : sk.slice('CREATE#'.length));
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return names;
}
