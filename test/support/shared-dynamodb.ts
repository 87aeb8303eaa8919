/**
 * The DynamoDB Local JVMs of a test run, shared by every jest project that needs DynamoDB: one for the
 * stacks the global setups start (the e2e and browser projects' stacks, up for the whole run) and one
 * for each jest worker. Every test file, harness and spawned test stack keeps a table of its own on
 * its worker's JVM (`testEndpoint()`), so the files a worker runs one after another share one JVM.
 *
 * Why one per worker and not one for all: DynamoDB Local (in memory, `-sharedDb`) serves one request
 * at a time, so with four workers on one JVM it ran at full load while the workers waited, and requests
 * took over 5 s (handlers timed out, a file took 700 s instead of 250 s). One JVM per worker keeps what
 * the suite had when it ran in band (one JVM serving one file at a time), with a JVM start each.
 *
 * The first project's global setup starts them, the last teardown stops them: jest runs every global
 * setup and teardown in its main process, so the handles and the count travel on `globalThis`, and the
 * workers it spawns afterwards inherit the endpoints in DYNAMODB_TEST_ENDPOINTS.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { type DynamoDbLocalHandle, findFreePort, startDynamoDbLocal } from '../../local/dynamodb-local';

/** The variable that carries the endpoints (comma-separated) to the workers and their stacks. */
export const DYNAMODB_TEST_ENDPOINTS = 'DYNAMODB_TEST_ENDPOINTS';

declare global {
  var __sharedDynamoDb: { handles: DynamoDbLocalHandle[]; users: number } | undefined;
}

async function startOne(): Promise<DynamoDbLocalHandle> {
  let lastError: unknown;
  // The free port can be taken between finding it and Java binding it; try a few.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startDynamoDbLocal({ port: await findFreePort() });
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/** The part of jest's global config (passed to every global setup) that says how many workers run files. */
export interface JestRunShape {
  maxWorkers: number;
  runInBand?: boolean;
  /** The command line's test path patterns (`npx jest test/integration/x.test.ts` names one file). */
  nonFlagArgs?: readonly string[];
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * How many workers run test files at once: one when jest runs in band, which it does when told to
 * (`-i`) and when the command line names a single file (one test to run: jest runs it in its main
 * process, as worker 1); else `maxWorkers`. Each JVM start costs about 5 s of CPU on a busy 2-core
 * machine, and a one-file run started four whose three were never used.
 */
export function concurrentWorkers(config: JestRunShape, cwd = process.cwd()): number {
  if (config.runInBand) return 1;
  const patterns = config.nonFlagArgs ?? [];
  if (patterns.length === 1 && isFile(resolve(cwd, patterns[0] ?? ''))) return 1;
  return Math.max(1, config.maxWorkers);
}

/**
 * Starts the run's JVMs (one for the setups' stacks, one per worker that runs files:
 * {@link concurrentWorkers}) unless a setup before this one did; resolves to the setups' endpoint.
 */
export async function acquireSharedDynamoDb(config: JestRunShape): Promise<string> {
  const shared = globalThis.__sharedDynamoDb;
  if (shared) {
    shared.users += 1;
    return shared.handles[0]?.endpoint ?? '';
  }
  const started = await Promise.allSettled(Array.from({ length: 1 + concurrentWorkers(config) }, startOne));
  const handles = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) {
    await Promise.all(handles.map((handle) => handle.stop()));
    throw failed.reason;
  }
  globalThis.__sharedDynamoDb = { handles, users: 1 };
  process.env[DYNAMODB_TEST_ENDPOINTS] = handles.map((handle) => handle.endpoint).join(',');
  return handles[0]?.endpoint ?? '';
}

/** Stops the run's JVMs when the last project that acquired them lets them go. */
export async function releaseSharedDynamoDb(): Promise<void> {
  const shared = globalThis.__sharedDynamoDb;
  if (!shared) return;
  shared.users -= 1;
  if (shared.users > 0) return;
  globalThis.__sharedDynamoDb = undefined;
  delete process.env[DYNAMODB_TEST_ENDPOINTS];
  await Promise.all(shared.handles.map((handle) => handle.stop()));
}

/**
 * The endpoint for code running here: in a jest worker, that worker's JVM; in jest's main process (the
 * global setups), the setups' one.
 */
export function testEndpoint(): string {
  const endpoints = (process.env[DYNAMODB_TEST_ENDPOINTS] ?? '').split(',').filter(Boolean);
  const [setups, ...workers] = endpoints;
  if (!setups) {
    throw new Error(
      `${DYNAMODB_TEST_ENDPOINTS} is not set: run this file in a jest project whose setup starts DynamoDB Local`,
    );
  }
  const worker = Number(process.env.JEST_WORKER_ID);
  if (!Number.isInteger(worker) || worker < 1 || workers.length === 0) return setups;
  return workers[(worker - 1) % workers.length] ?? setups;
}
