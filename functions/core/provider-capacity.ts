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
