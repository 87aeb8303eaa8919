/**
 * Sections `cli` and `start`: what an operator waits for. The CLI's time per command against DynamoDB
 * Local next to a bare `node` start (the floor), and `npm start`'s time to its ready line next to
 * DynamoDB Local's own start on the same machine (its floor: the JVM the stack cannot do without).
 */
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { grantCredits } from '../functions/money/grant';
import { putApiKey } from '../functions/money/key-issue';
import { createDocumentClient } from '../functions/store/client';
import { ensureTable } from '../functions/store/ensure-table';
import { DYNAMODB_LOCAL_CLIENT_CONFIG, findFreePort, startDynamoDbLocal } from '../local/dynamodb-local';
import { freePorts } from '../local/spawn-local-stack';
import { goal, median, ms, note, onCleanup, out, ROOT, ratio, table } from './support';

const CLI_RUNS = Number(process.env.BENCH_CLI_RUNS) || 10;
const START_RUNS = Number(process.env.BENCH_START_RUNS) || 3;
/** Issue goals: a command within 0.5 s; `npm start` within 1.3x of DynamoDB Local's own start. */
const CLI_GOAL_MS = 500;
const START_GOAL = 1.3;
const NODE = process.execPath;
const CLI = join(ROOT, 'bin', 'run-admin.cjs');

/** Wall time of one process run to its exit, in ms. */
function timed(command: string, args: string[], env: NodeJS.ProcessEnv): number {
  const start = performance.now();
  execFileSync(command, args, { cwd: ROOT, env, stdio: 'ignore', timeout: 60_000 });
  return performance.now() - start;
}

function medianOf(runs: number, once: () => number): number {
  return median(Array.from({ length: runs }, once));
}

export async function cliTimes(): Promise<void> {
  out('## Operator CLI: time per command');
  out();
  const port = await findFreePort();
  const dynamo = await startDynamoDbLocal({ port });
  onCleanup(() => dynamo.stop());
  const tableName = 'bench-cli';
  const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: dynamo.endpoint });
  onCleanup(() => doc.destroy());
  await ensureTable({ doc, tableName });
  await grantCredits({ doc, tableName }, { userId: 'bench-user', amount: 100 });
  await putApiKey({ doc, tableName }, { userId: 'bench-user', name: 'bench' });
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, DYNAMODB_PORT: String(port), TABLE_NAME: tableName };
  // The first run builds the bundle when the sources changed; it is not measured.
  timed(NODE, [CLI, '--version'], env);

  const floor = medianOf(CLI_RUNS, () => timed(NODE, ['-e', ''], env));
  const commands: Array<[string, string[]]> = [
    ['--help', ['--help']],
    ['--version', ['--version']],
    ['credits show', ['credits', 'show', '--user', 'bench-user']],
    ['credits grant', ['credits', 'grant', '--user', 'bench-user', '--amount', '1']],
    ['keys list', ['keys', 'list', '--user', 'bench-user']],
    ['limits show', ['limits', 'show', '--user', 'bench-user']],
  ];
  const rows: Array<Array<string | number>> = [['`node -e ""` (floor)', ms(floor), '1.00x']];
  let worst = 0;
  for (const [label, args] of commands) {
    const time = medianOf(CLI_RUNS, () => timed(NODE, [CLI, ...args], env));
    worst = Math.max(worst, time);
    rows.push([`node bin/run-admin.cjs ${label}`, ms(time), ratio(time, floor)]);
  }
  const npmRun = medianOf(Math.min(CLI_RUNS, 5), () =>
    timed('npm', ['run', '--silent', 'admin', '--', 'credits', 'show', '--user', 'bench-user'], env),
  );
  rows.push(['npm run --silent admin -- credits show', ms(npmRun), ratio(npmRun, floor)]);
  const tsx = medianOf(3, () =>
    timed(join(ROOT, 'node_modules', '.bin', 'tsx'), ['bin/admin.ts', 'credits', 'show', '--user', 'bench-user'], env),
  );
  rows.push(['before: tsx bin/admin.ts credits show', ms(tsx), ratio(tsx, floor)]);
  table(['Command (median of runs)', 'ms', 'vs floor'], rows, ['l', 'r', 'r']);
  note(`${CLI_RUNS} runs each (BENCH_CLI_RUNS); npm adds its own start-up on top of the CLI's.`);
  goal(`a CLI command within ${CLI_GOAL_MS} ms`, worst <= CLI_GOAL_MS, `slowest command ${ms(worst)} ms (median)`);
}

/** Starts `npm start`'s program on free ports and resolves with the ms to its ready line, then stops it. */
async function startOnce(): Promise<number> {
  const [port, dynamodbPort, mockPort, oidcPort] = await freePorts(4);
  const started = performance.now();
  const child = spawn(NODE, [join(ROOT, 'bin', 'run-ts.cjs'), 'local/start.ts'], {
    cwd: ROOT,
    // Only what a shell would pass: earlier sections set variables of their own in this process
    // (DYNAMODB_ENDPOINT of an engine that has since stopped, among others).
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      DYNAMODB_PORT: String(dynamodbPort),
      MOCK_PROVIDER_PORT: String(mockPort),
      OIDC_PROVIDER_PORT: String(oidcPort),
      DATA_DIR: ':memory:',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  try {
    return await new Promise<number>((ready, fail) => {
      let seen = '';
      let errors = '';
      child.stdout.on('data', (chunk: Buffer) => {
        seen += chunk.toString('utf8');
        if (seen.includes('API ready at')) ready(performance.now() - started);
      });
      child.stderr.on('data', (chunk: Buffer) => {
        errors = (errors + chunk.toString('utf8')).slice(-4000);
      });
      child.once('exit', (code) => fail(new Error(`npm start exited (${code}) before its ready line:\n${errors}`)));
    });
  } finally {
    child.kill('SIGINT');
    await exited;
  }
}

/** DynamoDB Local's start to its first answer; `documentedJvm` runs it as its documentation does (the floor). */
async function dynamoStartOnce(documentedJvm: boolean): Promise<number> {
  const port = await findFreePort();
  const started = performance.now();
  const dynamo = await startDynamoDbLocal({ port, documentedJvm });
  const time = performance.now() - started;
  await dynamo.stop();
  return time;
}

export async function startTimes(): Promise<void> {
  out('## `npm start`: time to the ready line');
  out();
  const floors: number[] = [];
  const tuned: number[] = [];
  const starts: number[] = [];
  // One start first, unmeasured: it builds the bundle when a source changed (a fresh clone).
  await startOnce();
  // Interleaved, so that drift on the machine falls on all alike.
  for (let run = 0; run < START_RUNS; run++) {
    floors.push(await dynamoStartOnce(true));
    tuned.push(await dynamoStartOnce(false));
    starts.push(await startOnce());
  }
  const floor = median(floors);
  const start = median(starts);
  table(
    ['What (median of runs)', 'ms', 'vs floor'],
    [
      ['DynamoDB Local alone as documented (`java -jar`), to its first answer (floor)', ms(floor), '1.00x'],
      [
        'DynamoDB Local alone as npm start runs it (C1, no verification, serial GC), to its first answer',
        ms(median(tuned)),
        ratio(median(tuned), floor),
      ],
      ['`npm start` (node bin/run-ts.cjs local/start.ts), to "API ready at"', ms(start), ratio(start, floor)],
    ],
    ['l', 'r', 'r'],
  );
  note(
    `${START_RUNS} runs each (BENCH_START_RUNS), in memory (DATA_DIR=:memory:, so each start creates the table ` +
      'and the demo user), from process start.',
  );
  goal(
    `npm start within ${START_GOAL}x of DynamoDB Local's own start`,
    start / floor <= START_GOAL,
    `${ratio(start, floor)}`,
  );
}
