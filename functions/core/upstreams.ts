/**
 * Upstreams as configuration (docs/guides/upstreams.md): an ordered list of upstreams, each with a name,
 * a profile (protocol and model mapping), a base URL, its own key, its own capacity, and optionally the
 * models it serves and a priority. One parser for every place that reads the list (the CDK context
 * `upstreams`, the local stack's `PROVIDER_UPSTREAMS`, the functions' `PROVIDER_UPSTREAMS`), so the same
 * text means the same upstreams everywhere; each problem names the upstream and the field.
 */
import { type CreateRateLimit, parseCreateRateLimit, parseMaxInFlight } from './provider-capacity';

/** One upstream, as configured. */
export interface UpstreamConfig {
  /** Its name: lower-case letters, digits and dashes, 1 to 32 (the task's record names it). */
  readonly name: string;
  /** The profile that maps our model ids to its models (a shipped profile's name: `mock`, `kie`). */
  readonly profile: string;
  /** Its API's base URL (http or https). */
  readonly baseUrl: string;
  /** Its key itself (local stack and tests only; deployed the key is in the upstream's own secret). */
  readonly apiKey?: string;
  /** The ARN or name of the secret holding its key (deployed; the stack fills it in). */
  readonly secretArn?: string;
  /** Its create rate (`"20/10"`: 20 per 10 s); none: no limit. */
  readonly createRateLimit?: CreateRateLimit;
  /** Its cap on our tasks in flight; none: no cap. */
  readonly maxInFlight?: number;
  /** Our model ids it serves; none: every model of the catalog. */
  readonly models?: readonly string[];
  /** Lower is tried first; default its place in the list. */
  readonly priority: number;
}

/** The name of the one upstream a deployment without an `upstreams` list has (today's provider settings). */
export const DEFAULT_UPSTREAM = 'default';

const NAME = /^[a-z0-9][a-z0-9-]{0,31}$/;
const FIELDS = new Set([
  'name',
  'profile',
  'baseUrl',
  'apiKey',
  'secretArn',
  'createRateLimit',
  'maxInFlight',
  'models',
  'priority',
]);
/** More would only be a typo: each upstream costs every dispatch step a read at most. */
export const MAX_UPSTREAMS = 16;

/** What the parser checks names against. */
export interface UpstreamRules {
  /** The profiles an upstream may name; absent: not checked (checked at synth and start already). */
  readonly profiles?: readonly string[];
  /** Our model ids (what `models` may list); absent: not checked. */
  readonly models?: readonly string[];
  /** Whether an upstream may carry its key in the configuration (locally yes, deployed no). */
  readonly keysInline: boolean;
}

/**
 * Parses and checks a list of upstreams (JSON text, or the value already parsed).
 * @throws Error naming `setting`, with one line per problem naming the upstream and its field
 */
export function parseUpstreams(value: unknown, setting: string, rules: UpstreamRules): UpstreamConfig[] {
  let list = value;
  if (typeof value === 'string') {
    try {
      list = JSON.parse(value);
    } catch (error) {
      throw new Error(`${setting}: not JSON (${(error as Error).message})`);
    }
  }
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_UPSTREAMS) {
    throw new Error(`${setting}: must be a list of 1 to ${MAX_UPSTREAMS} upstreams`);
  }
  const problems: string[] = [];
  const upstreams: UpstreamConfig[] = [];
  const seen = new Set<string>();
  list.forEach((raw: unknown, index) => {
    const label = `upstream ${index + 1}`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      problems.push(`${label}: must be an object`);
      return;
    }
    const entry = raw as Record<string, unknown>;
    const name = typeof entry.name === 'string' ? entry.name : '';
    const who = NAME.test(name) ? `upstream "${name}"` : label;
    const problem = (field: string, message: string) => problems.push(`${who}: ${field}: ${message}`);
    if (!NAME.test(name)) problem('name', 'required: lower-case letters, digits and dashes, 1 to 32');
    else if (seen.has(name)) problem('name', 'used by another upstream');
    seen.add(name);
    for (const key of Object.keys(entry)) if (!FIELDS.has(key)) problem(key, 'unknown field');
    const profile = typeof entry.profile === 'string' ? entry.profile : '';
    if (rules.profiles ? !rules.profiles.includes(profile) : profile === '') {
      problem('profile', `must be one of ${(rules.profiles ?? []).join(', ')}`);
    }
    const baseUrl = typeof entry.baseUrl === 'string' ? entry.baseUrl : '';
    if (!/^https?:\/\/[^\s/]+/.test(baseUrl)) problem('baseUrl', 'required: an http or https URL');
    if (entry.apiKey !== undefined && (!rules.keysInline || typeof entry.apiKey !== 'string' || !entry.apiKey)) {
      problem(
        'apiKey',
        rules.keysInline
          ? 'must be a non-empty string'
          : 'never in the configuration: the stack makes each upstream its own secret',
      );
    }
    if (entry.secretArn !== undefined && (typeof entry.secretArn !== 'string' || !entry.secretArn)) {
      problem('secretArn', 'must be a non-empty string');
    }
    let createRateLimit: CreateRateLimit | undefined;
    if (entry.createRateLimit !== undefined) {
      try {
        createRateLimit = parseCreateRateLimit(String(entry.createRateLimit), 'createRateLimit');
      } catch (error) {
        problem('createRateLimit', (error as Error).message.replace(/^createRateLimit /, ''));
      }
    }
    let maxInFlight: number | undefined;
    if (entry.maxInFlight !== undefined) {
      try {
        maxInFlight = parseMaxInFlight(String(entry.maxInFlight), 'maxInFlight');
      } catch (error) {
        problem('maxInFlight', (error as Error).message.replace(/^maxInFlight /, ''));
      }
    }
    let models: string[] | undefined;
    if (entry.models !== undefined) {
      if (!Array.isArray(entry.models) || entry.models.length === 0) problem('models', 'must be a non-empty list');
      else {
        models = entry.models.map(String);
        const unknown = models.filter((model) => rules.models !== undefined && !rules.models.includes(model));
        if (unknown.length > 0) problem('models', `unknown model ids: ${unknown.join(', ')}`);
      }
    }
    const priority = entry.priority === undefined ? index : entry.priority;
    if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < 0 || priority > 1000) {
      problem('priority', 'must be a whole number from 0 to 1000');
    }
    upstreams.push({
      name,
      profile,
      baseUrl,
      priority: typeof priority === 'number' ? priority : index,
      ...(typeof entry.apiKey === 'string' ? { apiKey: entry.apiKey } : {}),
      ...(typeof entry.secretArn === 'string' ? { secretArn: entry.secretArn } : {}),
      ...(createRateLimit ? { createRateLimit } : {}),
      ...(maxInFlight === undefined ? {} : { maxInFlight }),
      ...(models ? { models } : {}),
    });
  });
  if (problems.length > 0) throw new Error(`${setting}: the upstreams are invalid:\n  - ${problems.join('\n  - ')}`);
  // Priority order; the list's order breaks ties.
  return upstreams
    .map((upstream, index) => ({ upstream, index }))
    .sort((a, b) => a.upstream.priority - b.upstream.priority || a.index - b.index)
    .map(({ upstream }) => upstream);
}

/** The text form of a list (what `PROVIDER_UPSTREAMS` carries): rates back to `R/W`. */
export function formatUpstreams(upstreams: readonly UpstreamConfig[]): string {
  return JSON.stringify(
    upstreams.map((upstream) => ({
      ...upstream,
      ...(upstream.createRateLimit
        ? { createRateLimit: `${upstream.createRateLimit.requests}/${upstream.createRateLimit.windowSeconds}` }
        : {}),
    })),
  );
}

/** Whether `upstream` serves `model` (its `models`, or every model without one). */
export function servesModel(upstream: Pick<UpstreamConfig, 'models'>, model: string): boolean {
  return upstream.models === undefined || upstream.models.includes(model);
}
