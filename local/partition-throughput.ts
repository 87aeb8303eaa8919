/**
 * DynamoDB's per-partition throughput, modelled for the conflict layer (local/conflict-proxy.ts):
 * DynamoDB Local serves any rate on any key, the real service does not. Each partition key value
 * serves at most 3,000 read units and 1,000 write units a second, in either capacity mode
 * ("Key range throughput exceeded", docs/design/dispatching.md#scale), and refuses the excess with a
 * throttling error the SDK retries with backoff.
 *
 * The model: one bucket of units per partition and kind (read, write), holding one second's worth,
 * refilled at the limit's rate. A request is admitted while the buckets of the partitions it touches
 * are not in debt, and pays one unit at once; the rest of what it consumed (DynamoDB Local's own `ConsumedCapacity`, which follows DynamoDB's
 * rules: 4 KB per strongly consistent read unit, half that eventually consistent, 1 KB per write unit,
 * transactions twice) is charged once it is answered, possibly driving the bucket into debt, which the
 * refill pays back before the next request passes. Over any stretch longer than a second a partition
 * thus serves at most its limit, as DynamoDB does; within one second it may serve one bucket plus one
 * request. Not modelled: the adaptive capacity that splits a hot partition by sort key over minutes,
 * and the table- and account-level quotas.
 */

/** Units per second one partition key value serves. */
export interface PartitionLimits {
  readUnitsPerSecond: number;
  writeUnitsPerSecond: number;
}

/**
 * The limits of a proxy: one pair for every partition, and, for tests that make one partition the hot
 * one, lower pairs by partition key value (e.g. `DISPATCH#CAPACITY`, on any table).
 */
export interface ThroughputLimits extends PartitionLimits {
  byPartitionKey?: Record<string, PartitionLimits>;
}

/** DynamoDB's per-partition limits (the developer guide's "Partitions and data distribution"). */
export const DYNAMODB_PARTITION_LIMITS: PartitionLimits = { readUnitsPerSecond: 3000, writeUnitsPerSecond: 1000 };

/** Reads or writes: DynamoDB throttles them independently. */
export type UnitKind = 'read' | 'write';

/** What one partition consumed and was refused so far. */
export interface PartitionUsage {
  readUnits: number;
  writeUnits: number;
  /** Requests touching it that were refused for its throughput. */
  throttled: number;
}

/** What an admitted request pays per partition before its answer: the least any request consumes. */
const DOWN_PAYMENT = 1;

interface Bucket {
  units: number;
  at: number;
}

/** Per-partition buckets and the usage they saw (one per proxy). */
export class PartitionThroughput {
  private readonly buckets = new Map<string, Bucket>();
  private readonly usage = new Map<string, PartitionUsage>();

  constructor(
    private readonly limits: ThroughputLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** The partition's rate: its own limits when given (by the key value after the label's table), else the common ones. */
  private rate(kind: UnitKind, partition: string): number {
    const own = this.limits.byPartitionKey?.[partition.slice(partition.indexOf(' ') + 1)];
    const limits = own ?? this.limits;
    return kind === 'read' ? limits.readUnitsPerSecond : limits.writeUnitsPerSecond;
  }

  /** The bucket of `partition` for `kind`, refilled up to now. */
  private bucket(partition: string, kind: UnitKind): Bucket {
    const key = `${kind}\u0000${partition}`;
    const rate = this.rate(kind, partition);
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { units: rate, at: now };
    bucket.units = Math.min(rate, bucket.units + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    this.buckets.set(key, bucket);
    return bucket;
  }

  private usageOf(partition: string): PartitionUsage {
    const usage = this.usage.get(partition) ?? { readUnits: 0, writeUnits: 0, throttled: 0 };
    this.usage.set(partition, usage);
    return usage;
  }

  /**
   * Admits a request of `kind` on `partitions`, or refuses it: the partitions whose bucket is in debt
   * (each counted as throttled). Admitted, each partition pays {@link DOWN_PAYMENT} at once, so a burst
   * of requests sent together is refused past the bucket as it would be by DynamoDB, before any of them
   * is answered and charged in full.
   */
  admit(partitions: readonly string[], kind: UnitKind): string[] {
    const distinct = [...new Set(partitions)];
    const refused = distinct.filter((partition) => this.bucket(partition, kind).units <= 0);
    for (const partition of refused) this.usageOf(partition).throttled++;
    if (refused.length === 0) for (const partition of distinct) this.bucket(partition, kind).units -= DOWN_PAYMENT;
    return refused;
  }

  /** Charges the `units` of `kind` an admitted request consumed on `partition` (less its down payment). */
  charge(partition: string, kind: UnitKind, units: number): void {
    this.bucket(partition, kind).units -= units - DOWN_PAYMENT;
    const usage = this.usageOf(partition);
    if (kind === 'read') usage.readUnits += units;
    else usage.writeUnits += units;
  }

  /** Usage so far, by partition (a copy). */
  snapshot(): Map<string, PartitionUsage> {
    return new Map([...this.usage].map(([partition, usage]) => [partition, { ...usage }]));
  }
}

/**
 * Splits `total` units over items in proportion to their weights (fractions kept): how a transaction's
 * or batch's consumed capacity, which DynamoDB reports per table, is charged to its items' partitions.
 */
export function splitUnits(total: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (weights.length === 0 || sum <= 0) return weights.map(() => 0);
  return weights.map((weight) => (total * weight) / sum);
}

/** An attribute value in DynamoDB's wire form (`{ S: "..." }`, `{ N: "1" }`, `{ M: {...} }`, ...). */
type Wire = Record<string, unknown>;

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

/** Bytes of a number by DynamoDB's rule: 1 per two significant digits, plus 1. */
function numberBytes(text: string): number {
  const digits = text.replace(/^[-+]/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** Bytes of one attribute value by DynamoDB's item-size rules (the developer guide's "Item sizes"). */
export function attributeValueBytes(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  const wire = value as Wire;
  if (typeof wire.S === 'string') return utf8(wire.S);
  if (typeof wire.N === 'string') return numberBytes(wire.N);
  if (typeof wire.B === 'string') return Buffer.from(wire.B, 'base64').length;
  if ('BOOL' in wire || 'NULL' in wire) return 1;
  if (Array.isArray(wire.SS)) return wire.SS.reduce((sum: number, s: unknown) => sum + utf8(String(s)), 0);
  if (Array.isArray(wire.NS)) return wire.NS.reduce((sum: number, n: unknown) => sum + numberBytes(String(n)), 0);
  if (Array.isArray(wire.BS)) {
    return wire.BS.reduce((sum: number, b: unknown) => sum + Buffer.from(String(b), 'base64').length, 0);
  }
  if (Array.isArray(wire.L)) return 3 + wire.L.reduce((sum: number, v: unknown) => sum + 1 + attributeValueBytes(v), 0);
  if (typeof wire.M === 'object' && wire.M !== null) {
    return 3 + Object.entries(wire.M).reduce((sum, [name, v]) => sum + 1 + utf8(name) + attributeValueBytes(v), 0);
  }
  return 0;
}

/** Bytes of an item (attribute names and values) by DynamoDB's item-size rules. */
export function itemBytes(item: Record<string, unknown>): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + attributeValueBytes(value), 0);
}
