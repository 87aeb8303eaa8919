/**
 * What the tests and `npm start` spawn ends with the process that started it, however that one ends:
 * here by SIGKILL, which runs no exit handler. A spawned local stack watches its owner (EXIT_WITH_PID)
 * and stops as on Ctrl-C; a DynamoDB Local JVM runs under a watchdog that ends it when its starter's
 * lifeline pipe closes (local/dynamodb-local.ts). Linux only: processes are looked up in /proc.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { findFreePort, startDynamoDbLocal } from '../../local/dynamodb-local';
import { runDirectory } from '../../local/stack-state';
import type { OwnerReport } from '../support/local-process-owner';

// A stack's start (DynamoDB Local's JVM first) can take minutes on a busy machine, then its stop.
jest.setTimeout(300_000);

const ROOT = resolve(__dirname, '../..');
/** Wall-clock budget for a process to end: the owner is checked every second, then a clean stop. */
const END_BUDGET_MS = 60_000;
/** Wall-clock budget for the owner's start (spawnLocalStack itself waits up to 180 s). */
const READY_BUDGET_MS = 200_000;

/** Whether process `pid` has ended: gone from /proc, or a zombie (ended, not yet reaped by its parent). */
function ended(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the command name, which is in parentheses and may hold spaces.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

/** The running JVM whose arguments say `-port <port>` (DynamoDB Local's), if any. */
function javaOnPort(port: number): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // ended meanwhile
    }
    const at = args.indexOf('-port');
    if (args[0]?.endsWith('java') && at > 0 && args[at + 1] === String(port) && !ended(Number(name))) {
      return Number(name);
    }
  }
  return undefined;
}

/** The parent of process `pid` (from /proc: the field after the state). */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((child) => {
      try {
        return parentOf(child) === pid;
      } catch {
        return false; // ended meanwhile
      }
    });
}

/** Waits, on a wall-clock budget, until every pid has ended; returns those still running at the end. */
async function waitUntilEnded(pids: number[], budgetMs: number): Promise<number[]> {
  const deadline = Date.now() + budgetMs;
  let running = pids.filter((pid) => !ended(pid));
  while (running.length > 0 && Date.now() < deadline) {
    await new Promise((tick) => setTimeout(tick, 100));
    running = running.filter((pid) => !ended(pid));
  }
  return running;
}

/** Starts the owner (test/support/local-process-owner.ts) and resolves with its report once it is up. */
function startOwner(
  mode: 'stack' | 'dynamodb',
  owners: ChildProcess[],
): Promise<{ owner: ChildProcess; report: OwnerReport }> {
  const owner = spawn(process.execPath, ['bin/run-ts.cjs', 'test/support/local-process-owner.ts', mode], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  owners.push(owner);
  let output = '';
  return new Promise((done, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`the owner was not up within ${READY_BUDGET_MS} ms:\n${output}`)),
      READY_BUDGET_MS,
    );
    owner.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    owner.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const line = output.split('\n').find((text) => text.startsWith('{'));
      if (line === undefined) return;
      clearTimeout(timer);
      done({ owner, report: JSON.parse(line) as OwnerReport });
    });
    owner.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`the owner exited (${code}) before it was up:\n${output}`));
    });
  });
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

describe('processes spawned for tests end with their owner', () => {
  const owners: ChildProcess[] = [];
  /** Processes of ours found still running when a test's budget ran out. */
  const leftovers: number[] = [];

  afterEach(() => {
    // A failed test must not leave its processes behind either.
    for (const owner of owners.splice(0)) owner.kill('SIGKILL');
    for (const pid of leftovers.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ended already
      }
    }
  });

  test('a spawned local stack and its DynamoDB Local stop cleanly when the owner is killed with SIGKILL', async () => {
    // Prepare
    const { owner, report } = await startOwner('stack', owners);
    const stackPid = report.stackPid ?? Number.NaN;
    const jvmPid = javaOnPort(portOf(report.dynamodbEndpoint)) ?? Number.NaN;
    const record = join(runDirectory(), `in-memory-${portOf(report.baseUrl ?? '')}.json`);
    const recordedWhileRunning = existsSync(record);

    // Act
    owner.kill('SIGKILL');
    const running = await waitUntilEnded([stackPid, jvmPid], END_BUDGET_MS);
    leftovers.push(...running);

    // Assert
    expect(Number.isInteger(stackPid)).toBe(true);
    expect(Number.isInteger(jvmPid)).toBe(true);
    expect(running).toEqual([]);
    // The record is removed only by the stack's own stop: it stopped the normal way, not by a kill.
    expect(recordedWhileRunning).toBe(true);
    expect(existsSync(record)).toBe(false);
  });

  test('a DynamoDB Local JVM ends when the Node process that started it is killed with SIGKILL', async () => {
    // Prepare
    const { owner, report } = await startOwner('dynamodb', owners);
    const jvmPid = javaOnPort(portOf(report.dynamodbEndpoint)) ?? Number.NaN;

    // Act
    owner.kill('SIGKILL');
    const running = await waitUntilEnded([jvmPid], END_BUDGET_MS);
    leftovers.push(...running);

    // Assert
    expect(Number.isInteger(jvmPid)).toBe(true);
    expect(running).toEqual([]);
  });

  test('a DynamoDB Local stopped the normal way leaves neither its JVM nor its watchdog running', async () => {
    // Prepare
    const port = await findFreePort();
    const dynamodb = await startDynamoDbLocal({ port });
    const jvmPid = javaOnPort(port) ?? Number.NaN;
    const watchdogPid = parentOf(jvmPid);
    const watchdogArgs = readFileSync(`/proc/${watchdogPid}/cmdline`, 'utf8').split('\0');
    // The JVM and the watchdog's lifeline.
    const watched = childrenOf(watchdogPid);

    // Act
    await dynamodb.stop();
    const running = await waitUntilEnded([watchdogPid, ...watched], END_BUDGET_MS);
    leftovers.push(...running);

    // Assert
    expect(watchdogArgs[0]).toBe('/bin/sh');
    expect(watched).toHaveLength(2);
    expect(watched).toContain(jvmPid);
    expect(running).toEqual([]);
    expect(javaOnPort(port)).toBeUndefined();
  });
});
