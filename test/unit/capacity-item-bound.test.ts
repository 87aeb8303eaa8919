/**
 * The bound on the dispatcher's capacity item (functions/core/provider-capacity.ts): a create rate and
 * a cap on tasks in flight whose item could pass 300 KB are refused, naming the settings, the item's
 * computed size and what would fit; `npm start` refuses them at start (local/settings.ts) with the same
 * check as synth (test/infra/dispatch.test.ts). That the largest allowed item is written by DynamoDB
 * (Local) is shown in test/integration/dispatch-scale.test.ts.
 */
import {
  CAPACITY_BYTES_PER_IN_FLIGHT,
  CAPACITY_BYTES_PER_REQUEST,
  CAPACITY_FIXED_BYTES,
  capacityItemBytes,
  checkCapacityItemFits,
  MAX_CAPACITY_ITEM_BYTES,
} from '../../functions/core/provider-capacity';
import { localSettingsFromEnv } from '../../local/settings';

const NAMES = { createRateLimit: 'rate', maxInFlight: 'cap' };

/** The largest cap on tasks in flight that fits beside `requests` per window. */
const largestCap = (requests: number) =>
  Math.floor(
    (MAX_CAPACITY_ITEM_BYTES - CAPACITY_FIXED_BYTES - requests * CAPACITY_BYTES_PER_REQUEST) /
      CAPACITY_BYTES_PER_IN_FLIGHT,
  );

describe('the capacity item bound', () => {
  it("accepts Kie's 20/10 with any cap up to thousands, and the largest pair that fits", () => {
    // Prepare
    const cap = largestCap(2000);

    // Act
    const kie = () =>
      checkCapacityItemFits({ createRateLimit: { requests: 20, windowSeconds: 10 }, maxInFlight: 2000 }, NAMES);
    const largest = () =>
      checkCapacityItemFits({ createRateLimit: { requests: 2000, windowSeconds: 10 }, maxInFlight: cap }, NAMES);

    // Assert
    expect(kie).not.toThrow();
    expect(largest).not.toThrow();
    expect(capacityItemBytes({ requests: 2000, maxInFlight: cap })).toBeLessThanOrEqual(MAX_CAPACITY_ITEM_BYTES);
    expect(capacityItemBytes({ requests: 2000, maxInFlight: cap + 1 })).toBeGreaterThan(MAX_CAPACITY_ITEM_BYTES);
  });

  it('refuses one more task in flight than fits, naming both settings, the size and what fits', () => {
    // Prepare
    const cap = largestCap(2000) + 1;

    // Act
    const attempt = () =>
      checkCapacityItemFits({ createRateLimit: { requests: 2000, windowSeconds: 10 }, maxInFlight: cap }, NAMES);

    // Assert
    expect(attempt).toThrow(
      `rate=2000/10 with cap=${cap} would make the dispatcher's capacity item (DISPATCH#CAPACITY) up to 301 KB, over the 300 KB allowed`,
    );
    // 1,997: one more task in flight takes the room of more than two requests
    expect(attempt).toThrow(`At most 1997 requests per window fit here; at most ${cap - 1} tasks in flight fit here`);
  });

  it('refuses a create rate alone too large, and a cap alone too large', () => {
    // Act
    const rate = () => checkCapacityItemFits({ createRateLimit: { requests: 6000, windowSeconds: 10 } }, NAMES);
    const cap = () => checkCapacityItemFits({ maxInFlight: 3000 }, NAMES);

    // Assert
    expect(rate).toThrow('rate=6000/10 would make');
    expect(rate).toThrow(
      `At most ${Math.floor((MAX_CAPACITY_ITEM_BYTES - CAPACITY_FIXED_BYTES) / CAPACITY_BYTES_PER_REQUEST)} requests per window fit here`,
    );
    expect(cap).toThrow('cap=3000 would make');
  });

  it('stops `npm start` on PROVIDER_CREATE_RATE_LIMIT and PROVIDER_MAX_IN_FLIGHT whose item would not fit', () => {
    // Act
    const rate = () => localSettingsFromEnv({ PROVIDER_CREATE_RATE_LIMIT: '6000/10' });
    const both = () => localSettingsFromEnv({ PROVIDER_CREATE_RATE_LIMIT: '2000/10', PROVIDER_MAX_IN_FLIGHT: '2000' });
    const fits = localSettingsFromEnv({ PROVIDER_CREATE_RATE_LIMIT: '20/10', PROVIDER_MAX_IN_FLIGHT: '2000' });

    // Assert
    expect(rate).toThrow("PROVIDER_CREATE_RATE_LIMIT=6000/10 would make the dispatcher's capacity item");
    expect(both).toThrow('PROVIDER_CREATE_RATE_LIMIT=2000/10 with PROVIDER_MAX_IN_FLIGHT=2000 would make');
    expect(fits).toMatchObject({ providerCreateRateLimit: '20/10', providerMaxInFlight: 2000 });
  });
});
