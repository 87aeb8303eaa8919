/**
 * Every variable a deployed function reads is set for it by the stack (the environment contract,
 * functions/environment/environment.ts). A function missing one would otherwise fail only in AWS, where
 * no test here runs.
 *
 * What a function reads is derived from the bundle CDK built for it, not declared per function: a
 * declaration is a second list kept by hand, the very drift this test exists to catch, while the bundle
 * is what deploys, after esbuild's tree shaking and the build-time `define`s. It works because each
 * variable is an exported constant of its own, marked pure (esbuild drops the ones a bundle does not
 * import), and every read goes through those constants (test/unit/environment-contract.test.ts): so a
 * variable's name appears in a bundle as a string literal exactly when the bundle can read it. A name
 * left in a bundle by other code (a dependency with a string of that spelling) would only make the test
 * demand more, never less; the sanity test below checks that the derivation discriminates at all.
 */
import * as fs from 'node:fs';
import { ENVIRONMENT } from '../../functions/environment/environment-catalog';
import { GenerationFunction } from '../../lib/generation-function';
import { BUNDLED_ASSEMBLY_TIMEOUT_MS, bundledAssembly } from './bundled-assembly';
import { cleanUp, logicalIdOf, type SynthesizedService, synthesize } from './support';

interface DeployedFunction {
  /** The construct path: names the function in failure messages. */
  name: string;
  /** Names of the contract found in the function's bundle. */
  reads: Set<string>;
  /** Variables the stack sets for the function. */
  sets: Set<string>;
}

/** An exception to a rule below: the functions it covers and why it holds. */
interface Exception {
  functions: RegExp;
  why: string;
}

/**
 * Variables a function's bundle holds that the stack rightly leaves unset for it, with why. Anything
 * else the contract marks `stack` must be set wherever it is read.
 */
const READ_BUT_UNSET: Readonly<Record<string, Exception>> = {
  PROVIDER_BASE_URL: {
    functions: /\/(MediaWorker|WebhookWorker)$/,
    why: 'the workers run without the provider when it is unset (lifecycleWithoutProvider)',
  },
  PROVIDER_SECRET_ARN: {
    functions: /\/(MediaWorker|WebhookWorker)$/,
    why: 'read only on the provider branch, taken only with PROVIDER_BASE_URL',
  },
  PROVIDER_CALLBACK_SECRET_ARN: {
    functions: /\/(MediaWorker|WebhookWorker)$/,
    why: 'read only on the provider branch, taken only with PROVIDER_BASE_URL',
  },
  PROVIDER_REFRESH_INTERVAL_SECONDS: {
    functions: /\/(MediaWorker|WebhookWorker)$/,
    why: 'lifecycleConfigFromEnv reads it for every lifecycle; only provider refreshes use it, which workers never make',
  },
  MAX_PENDING_SECONDS: {
    functions: /\/(MediaWorker|WebhookWorker)$/,
    why: 'lifecycleConfigFromEnv reads it for every lifecycle; only refreshes and sweeps use it, which workers never make',
  },
};

let service: SynthesizedService | undefined;
let deployed: DeployedFunction[] = [];

/** The names of the contract that appear as string literals in `bundle`. */
function contractNamesIn(bundle: string): Set<string> {
  return new Set(
    ENVIRONMENT.map((variable) => variable.name).filter((name) => new RegExp(`["'\`]${name}["'\`]`).test(bundle)),
  );
}

beforeAll(async () => {
  // With a cap on tasks in flight, so the variables set only when configured are checked too: the stack
  // gives PROVIDER_MAX_IN_FLIGHT to the finishing functions, whose bundles must read it. The bundles
  // are the default stack's, shared by the infra files (bundled-assembly.ts): the cap is an environment
  // variable, and no bundle depends on it.
  service = synthesize({ providerMaxInFlight: '4' }, { bundle: false });
  const assembly = await bundledAssembly();
  const bundles = new Map(assembly.bundles.map((bundle) => [bundle.path, bundle.file]));
  const resources = service.template.toJSON().Resources as Record<string, { Properties: Record<string, unknown> }>;
  const functions = service.stack.node.findAll().filter((node): node is GenerationFunction => {
    return node instanceof GenerationFunction;
  });
  deployed = functions.map((fn) => {
    const properties = resources[logicalIdOf(service as SynthesizedService, fn)]?.Properties;
    if (!properties) throw new Error(`no resource for ${fn.node.path}`);
    const bundleFile = bundles.get(fn.node.path);
    if (!bundleFile) throw new Error(`no bundle for ${fn.node.path} in ${assembly.directory}`);
    const variables = (properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
    return {
      name: fn.node.path,
      reads: contractNamesIn(fs.readFileSync(bundleFile, 'utf8')),
      sets: new Set(Object.keys(variables ?? {})),
    };
  });
}, BUNDLED_ASSEMBLY_TIMEOUT_MS);

afterAll(() => cleanUp(service));

describe('environment contract against the synthesized stack', () => {
  test('the derivation discriminates: bundles read different variables, and what they plainly need', () => {
    // Prepare
    const getTask = deployed.find((fn) => /GetTask/i.test(fn.name));
    const openapi = deployed.find((fn) => /Openapi|OpenApi/i.test(fn.name));

    // Act
    const readCounts = new Set(deployed.map((fn) => fn.reads.size));

    // Assert
    expect(deployed.length).toBeGreaterThanOrEqual(20);
    expect(readCounts.size).toBeGreaterThan(3);
    expect([...(getTask?.reads ?? [])]).toEqual(expect.arrayContaining(['TABLE_NAME', 'PROVIDER_BASE_URL']));
    expect(openapi?.reads.has('PROVIDER_BASE_URL')).toBe(false);
    expect(openapi?.reads.has('OIDC_ISSUER')).toBe(false);
  });

  test('the cap on tasks in flight is read by the functions that finish tasks, not by submission', () => {
    // Act
    const readers = deployed.filter((fn) => fn.reads.has('PROVIDER_MAX_IN_FLIGHT')).map((fn) => fn.name);

    // Assert
    for (const name of ['GetTask', 'ProviderCallback', 'Sweeper', 'MediaWorker', 'Dispatcher']) {
      expect(readers).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`/${name}$`))]));
    }
    expect(readers.filter((name) => /Submit/.test(name))).toEqual([]);
  });

  test('every variable the stack must set is set for every function whose bundle reads it', () => {
    // Prepare
    const required = new Set(ENVIRONMENT.filter((variable) => variable.setBy === 'stack').map((v) => v.name));

    // Act
    const missing = deployed.flatMap((fn) =>
      [...fn.reads]
        .filter((name) => required.has(name) && !fn.sets.has(name))
        .filter((name) => !READ_BUT_UNSET[name]?.functions.test(fn.name))
        .map((name) => `${fn.name}: ${name}`),
    );

    // Assert
    expect(missing).toEqual([]);
  });

  test('the stack sets only variables of the contract that are its to set', () => {
    // Prepare
    const allowed = new Set(
      ENVIRONMENT.filter((v) => ['stack', 'stack-when-configured', 'build'].includes(v.setBy)).map((v) => v.name),
    );

    // Act
    const stray = deployed.flatMap((fn) =>
      [...fn.sets].filter((name) => !allowed.has(name)).map((name) => `${fn.name}: ${name}`),
    );

    // Assert
    expect(stray).toEqual([]);
  });

  test('the stack sets no variable a function never reads (build-time ones aside)', () => {
    // Prepare
    const buildTime = new Set(ENVIRONMENT.filter((v) => v.setBy === 'build').map((v) => v.name));

    // Act
    const unread = deployed.flatMap((fn) =>
      [...fn.sets].filter((name) => !buildTime.has(name) && !fn.reads.has(name)).map((name) => `${fn.name}: ${name}`),
    );

    // Assert
    expect(unread).toEqual([]);
  });
});
