/**
 * The upstream's declared capacity: how many new tasks it takes per time window (Kie.ai: 20 per 10 s,
 * the excess answered 429 and not queued) and, for upstreams that publish one, how many tasks may run
 * at once per account. One parser for every place that reads these settings (the mock provider's
 * `MOCK_PROVIDER_*` toggles, the provider profile, the CDK context and the local stack's environment),
 * so the same text means the same limit everywhere.
 */

/** At most `requests` new tasks in any `windowSeconds`-long window. */
export interface CreateRateLimit {
  readonly requests: number;
  readonly windowSeconds: number;
}

/** Upper bounds that only catch typos: no upstream publishes more. */
const MAX_REQUESTS = 100_000;
const MAX_WINDOW_SECONDS = 86_400;
export const MAX_IN_FLIGHT = 1_000_000;

/** The setting's text form, e.g. `20/10` (20 requests per 10 seconds). */
export function formatCreateRateLimit(limit: CreateRateLimit): string {
  return `${limit.requests}/${limit.windowSeconds}`;
}

/**
 * Parses `<requests>/<windowSeconds>` (whole numbers, e.g. `20/10`).
 * @throws Error naming `setting` and the expected form when the text is anything else
 */
export function parseCreateRateLimit(text: string, setting: string): CreateRateLimit {
  const match = /^\s*(\d{1,9})\s*\/\s*(\d{1,9})\s*$/.exec(text);
  const requests = Number(match?.[1]);
  const windowSeconds = Number(match?.[2]);
  if (!match || requests < 1 || requests > MAX_REQUESTS || windowSeconds < 1 || windowSeconds > MAX_WINDOW_SECONDS) {
    throw new Error(
      `${setting} must be <requests>/<seconds> with whole numbers (requests 1-${MAX_REQUESTS}, seconds 1-${MAX_WINDOW_SECONDS}), e.g. 20/10; got "${text}"`,
    );
  }
  return { requests, windowSeconds };
}

/**
 * Parses a cap on tasks in flight (a whole number from 1).
 * @throws Error naming `setting` when the text is anything else
 */
export function parseMaxInFlight(text: string, setting: string): number {
  const value = /^\s*\d{1,9}\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(value) || value < 1 || value > MAX_IN_FLIGHT) {
    throw new Error(`${setting} must be a whole number from 1 to ${MAX_IN_FLIGHT}; got "${text}"`);
  }
  return value;
}

/**
 * The largest capacity item (`DISPATCH#CAPACITY`, functions/store/dispatch-capacity.ts) a configuration
 * may make, in DynamoDB's item-size bytes: three quarters of DynamoDB's 400 KB item limit, so the item
 * keeps room for what the estimate leaves out, and every write of it still costs at most 300 write units.
 */
export const MAX_CAPACITY_ITEM_BYTES = 300 * 1024;

/**
 * Bytes one request of the create rate adds to the capacity item, at most (DynamoDB's size rules: a
 * number is 1 byte per two significant digits plus 1, a list or map element 1 byte more, a map 3 bytes
 * and its keys' lengths): its send time in `sends` (an epoch-ms number, 8 + 1 bytes) and its ring
 * position `answered<i>` = `{ slot, at }` (a name of up to 14 characters, a map of 3 bytes with a slot
 * number of up to 15 digits and an epoch-ms time: 42 bytes). Measured per request in
 * test/integration/dispatch-scale.test.ts: about 45.
 */
export const CAPACITY_BYTES_PER_REQUEST = 56;

/**
 * Bytes one task in flight adds to the `running` map, at most: its key (a task id, a UUID of 36
 * characters), a map of 3 bytes plus 1 as an element, `sentAt` (6 + 8 + 1) and `userId` (6 + the id + 1)
 * with user ids up to 64 characters (Cognito's are 36). Measured per task: about 100.
 */
export const CAPACITY_BYTES_PER_IN_FLIGHT = 128;

/**
 * Bytes of everything else on the item, at most: its keys, the version, the token bucket, the backoffs,
 * the cursor (an account id), the wake-up and heal times, and `modelBackoff` (about 50 bytes per model
 * refused in the last few seconds: room for some 100 models).
 */
export const CAPACITY_FIXED_BYTES = 8 * 1024;

/** The capacity item's size, at most, under a create rate of `requests` per window and `maxInFlight`. */
export function capacityItemBytes(limits: { requests?: number; maxInFlight?: number }): number {
  return (
    CAPACITY_FIXED_BYTES +
    (limits.requests ?? 1) * CAPACITY_BYTES_PER_REQUEST +
    (limits.maxInFlight ?? 0) * CAPACITY_BYTES_PER_IN_FLIGHT
  );
}

/**
 * Refuses a create rate and cap on tasks in flight whose capacity item could pass
 * {@link MAX_CAPACITY_ITEM_BYTES}: DynamoDB refuses every write of an item over 400 KB, and the dispatch
 * would stop. The message names the settings (`names`: how the caller's configuration calls them), the
 * item's computed size and the largest value each could take alone.
 * @throws Error when the item would not fit
 */
export function checkCapacityItemFits(
  limits: { createRateLimit?: CreateRateLimit; maxInFlight?: number },
  names: { createRateLimit: string; maxInFlight: string },
): void {
  const requests = limits.createRateLimit?.requests;
  const bytes = capacityItemBytes({
    ...(requests === undefined ? {} : { requests }),
    ...(limits.maxInFlight === undefined ? {} : { maxInFlight: limits.maxInFlight }),
  });
  if (bytes <= MAX_CAPACITY_ITEM_BYTES) return;
  const room = MAX_CAPACITY_ITEM_BYTES - CAPACITY_FIXED_BYTES;
  const settings = [
    ...(limits.createRateLimit ? [`${names.createRateLimit}=${formatCreateRateLimit(limits.createRateLimit)}`] : []),
    ...(limits.maxInFlight === undefined ? [] : [`${names.maxInFlight}=${limits.maxInFlight}`]),
  ].join(' with ');
  const kb = (value: number) => `${Math.ceil(value / 1024)} KB`;
  const inFlightLeft = Math.floor((room - (requests ?? 1) * CAPACITY_BYTES_PER_REQUEST) / CAPACITY_BYTES_PER_IN_FLIGHT);
  const requestsLeft = Math.floor(
    (room - (limits.maxInFlight ?? 0) * CAPACITY_BYTES_PER_IN_FLIGHT) / CAPACITY_BYTES_PER_REQUEST,
  );
  throw new Error(
    `${settings} would make the dispatcher's capacity item (DISPATCH#CAPACITY) up to ${kb(bytes)}, over the ${kb(MAX_CAPACITY_ITEM_BYTES)} allowed ` +
      `(DynamoDB refuses items over 400 KB, and each write costs 1 write unit per KB): ` +
      `about ${CAPACITY_BYTES_PER_REQUEST} bytes per request of the rate and ${CAPACITY_BYTES_PER_IN_FLIGHT} per task in flight. ` +
      (limits.createRateLimit ? `At most ${Math.max(0, requestsLeft)} requests per window fit here` : '') +
      (limits.createRateLimit && limits.maxInFlight !== undefined ? '; ' : '') +
      (limits.maxInFlight === undefined ? '' : `at most ${Math.max(0, inFlightLeft)} tasks in flight fit here`) +
      ' (docs/design/dispatching.md#scale).',
  );
}
