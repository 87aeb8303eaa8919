/**
 * The conflict layer's model of DynamoDB's per-partition throughput (local/partition-throughput.ts) on a
 * clock the test moves: what a partition admits within its limit, what it refuses beyond, how the
 * refill pays a debt back, and that reads, writes and partitions are independent. Also the item-size
 * rules the layer weighs puts by.
 */
import {
  attributeValueBytes,
  DYNAMODB_PARTITION_LIMITS,
  itemBytes,
  PartitionThroughput,
  splitUnits,
} from '../../local/partition-throughput';

describe('the per-partition throughput model', () => {
  it("admits DynamoDB's 1,000 write units a second on one partition, refuses beyond, and admits again once refilled", () => {
    // Prepare
    let now = 0;
    const model = new PartitionThroughput(DYNAMODB_PARTITION_LIMITS, () => now);

    // Act: 1,000 one-unit writes within the same instant, then one more, then half a second later
    const admitted = Array.from({ length: 1000 }, () => model.admit(['t DISPATCH#CAPACITY'], 'write')).filter(
      (refused) => refused.length === 0,
    ).length;
    for (let i = 0; i < 1000; i++) model.charge('t DISPATCH#CAPACITY', 'write', 1);
    const beyond = model.admit(['t DISPATCH#CAPACITY'], 'write');
    now += 500;
    const refilled = model.admit(['t DISPATCH#CAPACITY'], 'write');

    // Assert
    expect(admitted).toBe(1000);
    expect(beyond).toEqual(['t DISPATCH#CAPACITY']);
    expect(refilled).toEqual([]);
    expect(model.snapshot().get('t DISPATCH#CAPACITY')).toEqual({ readUnits: 0, writeUnits: 1000, throttled: 1 });
  });

  it('refuses a burst sent together past the bucket before any of it is answered', () => {
    // Prepare
    const model = new PartitionThroughput({ readUnitsPerSecond: 30, writeUnitsPerSecond: 10 }, () => 0);

    // Act: 15 writes admitted or refused before any answer charges them
    const refusals = Array.from({ length: 15 }, () => model.admit(['t USER#a'], 'write').length);

    // Assert
    expect(refusals.filter((count) => count === 0)).toHaveLength(10);
    expect(refusals.filter((count) => count === 1)).toHaveLength(5);
  });

  it('charges a large request its units: five 300-unit writes leave the partition 500 units in debt, paid back in 0.5 s', () => {
    // Prepare
    let now = 0;
    const model = new PartitionThroughput(DYNAMODB_PARTITION_LIMITS, () => now);
    model.admit(['t DISPATCH#CAPACITY'], 'write');
    model.charge('t DISPATCH#CAPACITY', 'write', 300);
    for (let i = 0; i < 4; i++) {
      model.admit(['t DISPATCH#CAPACITY'], 'write');
      model.charge('t DISPATCH#CAPACITY', 'write', 300);
    }

    // Act
    const inDebt = model.admit(['t DISPATCH#CAPACITY'], 'write');
    now += 100;
    const stillInDebt = model.admit(['t DISPATCH#CAPACITY'], 'write');
    now += 450;
    const paidBack = model.admit(['t DISPATCH#CAPACITY'], 'write');

    // Assert: 1,500 units taken from a 1,000-unit bucket, refilled at 1 unit per ms
    expect(inDebt).toHaveLength(1);
    expect(stillInDebt).toHaveLength(1);
    expect(paidBack).toEqual([]);
  });

  it('throttles reads and writes, and each partition, independently', () => {
    // Prepare
    const model = new PartitionThroughput({ readUnitsPerSecond: 3, writeUnitsPerSecond: 1 }, () => 0);
    model.admit(['t DISPATCH#QUEUE'], 'read');
    model.charge('t DISPATCH#QUEUE', 'read', 20);

    // Act
    const queueRead = model.admit(['t DISPATCH#QUEUE'], 'read');
    const queueWrite = model.admit(['t DISPATCH#QUEUE'], 'write');
    const otherRead = model.admit(['t USER#a'], 'read');
    const transaction = model.admit(['t USER#a', 't DISPATCH#QUEUE'], 'read');

    // Assert
    expect(queueRead).toEqual(['t DISPATCH#QUEUE']);
    expect(queueWrite).toEqual([]);
    expect(otherRead).toEqual([]);
    expect(transaction).toEqual(['t DISPATCH#QUEUE']);
  });

  it('holds one partition to its own lower limits when given, on any table, the others to the common ones', () => {
    // Prepare
    const model = new PartitionThroughput(
      {
        ...DYNAMODB_PARTITION_LIMITS,
        byPartitionKey: { 'DISPATCH#CAPACITY': { readUnitsPerSecond: 1, writeUnitsPerSecond: 1 } },
      },
      () => 0,
    );

    // Act
    const first = model.admit(['t1 DISPATCH#CAPACITY'], 'read');
    const second = model.admit(['t1 DISPATCH#CAPACITY'], 'read');
    const otherTable = model.admit(['t2 DISPATCH#CAPACITY'], 'read');
    const otherPartition = Array.from({ length: 100 }, () => model.admit(['t1 DISPATCH#QUEUE'], 'read')).flat();

    // Assert
    expect(first).toEqual([]);
    expect(second).toEqual(['t1 DISPATCH#CAPACITY']);
    expect(otherTable).toEqual([]);
    expect(otherPartition).toEqual([]);
  });

  it("splits a transaction's units over its items by weight", () => {
    expect(splitUnits(8, [3, 1])).toEqual([6, 2]);
    expect(splitUnits(4, [])).toEqual([]);
  });
});

describe("DynamoDB's item-size rules", () => {
  it('counts names, strings by UTF-8 bytes, numbers by significant digits, lists and maps with their overhead', () => {
    expect(attributeValueBytes({ S: 'héllo' })).toBe(6);
    expect(attributeValueBytes({ N: '1764201612345' })).toBe(8);
    expect(attributeValueBytes({ N: '1764201600000' })).toBe(5);
    expect(attributeValueBytes({ N: '-0.00120' })).toBe(2);
    expect(attributeValueBytes({ BOOL: true })).toBe(1);
    expect(attributeValueBytes({ L: [{ N: '1' }, { N: '22' }] })).toBe(3 + (1 + 2) + (1 + 2));
    expect(attributeValueBytes({ M: { at: { N: '12' } } })).toBe(3 + 1 + 2 + 2);
    expect(itemBytes({ PK: { S: 'DISPATCH#CAPACITY' }, n: { N: '7' } })).toBe(2 + 17 + 1 + 2);
  });
});
