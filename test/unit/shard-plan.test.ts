import { planTake, totalAmount } from '../../functions/store/shard-plan';
import { isThin } from '../../functions/store/thin-balance';

/** `n` shards holding `each`. */
const even = (n: number, each: number) => new Array<number>(n).fill(each);

/** The amounts after a plan is applied. */
function applied(amounts: number[], plan: ReturnType<typeof planTake>): number[] {
  const after = [...amounts];
  for (const { shard, delta } of plan ?? []) after[shard] = (after[shard] ?? 0) + delta;
  return after;
}

describe('planTake (how an accept takes a cost from an amount split over shards)', () => {
  it('takes the whole cost from the preferred shard when it covers it', () => {
    // Prepare
    const amounts = even(32, 10);

    // Act
    const plan = planTake(amounts, 3, { prefer: 7 });

    // Assert
    expect(plan).toEqual([{ shard: 7, delta: -3 }]);
  });

  it('answers nothing when the total cannot pay', () => {
    // Prepare
    const amounts = even(32, 0).map((_, shard) => (shard < 2 ? 1 : 0));

    // Act
    const plan = planTake(amounts, 3);

    // Assert
    expect(plan).toBeUndefined();
  });

  it('gathers a thin amount into lumps of at least one cost, taking exactly the cost', () => {
    // Prepare: 2 a shard, a cost of 3 fits on none of them.
    const amounts = even(32, 2);

    // Act
    const plan = planTake(amounts, 3, { random: () => 0.5 });

    // Assert
    const after = applied(amounts, plan);
    expect(totalAmount(amounts) - totalAmount(after)).toBe(3);
    expect(after.every((amount) => amount >= 0)).toBe(true);
    expect(after.filter((amount) => amount >= 3)).toHaveLength(Math.floor(61 / 3));
  });

  it('gathers around the shards a racing transaction holds while the others cover the cost', () => {
    // Prepare: shards 0..3 conflicted on the last try.
    const amounts = even(32, 1);
    const avoid = new Set([0, 1, 2, 3]);

    // Act
    const plan = planTake(amounts, 3, { avoid });

    // Assert
    expect(plan?.some(({ shard }) => avoid.has(shard))).toBe(false);
    expect(totalAmount(amounts) - totalAmount(applied(amounts, plan))).toBe(3);
  });

  it('names held shards again only when the others cannot cover the cost', () => {
    // Prepare: only the held shards have credits.
    const amounts = even(32, 0).map((_, shard) => (shard < 4 ? 1 : 0));
    const avoid = new Set([0, 1, 2, 3]);

    // Act
    const plan = planTake(amounts, 3, { avoid });

    // Assert
    expect(totalAmount(amounts) - totalAmount(applied(amounts, plan))).toBe(3);
    expect(applied(amounts, plan).every((amount) => amount >= 0)).toBe(true);
  });
});

describe('isThin (a layout where a shard picked at random more likely falls short than fits)', () => {
  it.each([
    ['every shard covers the cost', even(32, 10), false],
    ['half the shards cover it', even(32, 0).map((_, shard) => (shard < 16 ? 3 : 0)), false],
    ['2 credits a shard for a cost of 3', even(32, 2), true],
    ['nothing left', even(32, 0), true],
  ])('%s', (_, balances, thin) => {
    // Act
    const answer = isThin(balances, 3);

    // Assert
    expect(answer).toBe(thin);
  });
});
