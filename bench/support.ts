/**
 * What every benchmark section shares: statistics, markdown tables, the machine header, the output
 * sink (the console and bench/results.md) and a clean-up registry so an interrupted run leaves no
 * DynamoDB Local or local stack behind.
 */
import { cpus, freemem, loadavg, platform, release, totalmem } from 'node:os';
import { resolve } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../functions/store/client';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../local/dynamodb-local';
import { freePorts, type SpawnedLocalStack, spawnLocalStack } from '../local/spawn-local-stack';

/** The repository root (bench/..). */
export const ROOT = resolve(__dirname, '..');

const lines: string[] = [];

/** Prints a line and keeps it for bench/results.md. */
export function out(line = ''): void {
  lines.push(line);
  process.stdout.write(`${line}\n`);
}

/** Progress notes: on stderr only, never in results.md. */
export function note(line: string): void {
  process.stderr.write(`  … ${line}\n`);
}

/** Everything printed with `out` so far. */
export function printed(): string {
  return `${lines.join('\n')}\n`;
}

/** A markdown table; `align` per column ('r' right-aligns figures). */
export function table(header: string[], rows: Array<Array<string | number>>, align: Array<'l' | 'r'> = []): void {
  const cells = rows.map((row) => row.map(String));
  // Padded as the repository's formatter (biome) lays out markdown tables, so results.md passes lint.
  const widths = header.map((title, i) => Math.max(3, title.length, ...cells.map((row) => (row[i] ?? '').length)));
  const pad = (text: string, i: number) =>
    align[i] === 'r' ? text.padStart(widths[i] ?? 0) : text.padEnd(widths[i] ?? 0);
  const line = (row: string[]) => `| ${row.map(pad).join(' | ')} |`;
  out(line(header));
  out(`| ${widths.map((w, i) => (align[i] === 'r' ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`);
  for (const row of cells) out(line(row));
  out();
}

/** The value below which `p` percent of the samples fall (nearest rank). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

export const median = (samples: readonly number[]): number => percentile(samples, 50);

export function mean(samples: readonly number[]): number {
  return samples.reduce((sum, x) => sum + x, 0) / samples.length;
}

/** Milliseconds with a sensible number of decimals. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value < 1 ? value.toFixed(3) : value < 100 ? value.toFixed(2) : value.toFixed(0);
}

export function ratio(value: number, floor: number): string {
  return `${(value / floor).toFixed(2)}x`;
}

export function bytes(value: number): string {
  return value.toLocaleString('en-US');
}

/** A goal line: `PASS`/`MISS` with the figure, so docs/development/performance.md can quote it. */
export function goal(label: string, met: boolean, detail: string): void {
  out(`${met ? 'PASS' : 'MISS'} ${label}: ${detail}`);
  out();
}

/** The date and the machine, printed at the top of every run. */
export function machineHeader(): void {
  const cpu = cpus();
  out(`Date: ${new Date().toISOString()}`);
  out(
    `Machine: ${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores, ` +
      `${(totalmem() / 2 ** 30).toFixed(1)} GiB memory (${(freemem() / 2 ** 30).toFixed(1)} GiB free), ` +
      `${platform()} ${release()}, Node ${process.version}`,
  );
  // Other work on the machine skews every timing below; the load average says how much there was.
  out(
    `Load average at start (1/5/15 min): ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' / ')}`,
  );
  out();
}

type Cleanup = () => Promise<void> | void;
const cleanups: Cleanup[] = [];

/** Registers a clean-up; it runs when the section ends (`runCleanups`) or the run is interrupted. */
export function onCleanup(cleanup: Cleanup): () => void {
  cleanups.push(cleanup);
  return () => {
    const index = cleanups.indexOf(cleanup);
    if (index >= 0) cleanups.splice(index, 1);
  };
}

/** Runs every registered clean-up, newest first; a failing one does not stop the others. */
export async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup();
    } catch (error) {
      process.stderr.write(`clean-up failed: ${(error as Error).message}\n`);
    }
  }
}

/** Rejects after `timeoutMs` so that no step of the benchmark can hang the run. */
export async function bounded<T>(label: string, timeoutMs: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label} did not finish within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A local stack as `npm start` runs it, with the mock and the dispatcher at one create rate. */
export interface PacedBenchStack {
  stack: SpawnedLocalStack;
  /** The mock provider's base URL. */
  mock: string;
  /** POSTs to the mock's `/__control` (faults, limits, `resetStats`). */
  control(body: Record<string, unknown>): Promise<void>;
  store: { doc: DynamoDBDocumentClient; tableName: string };
}

/**
 * Starts the local stack on `tableName` with the mock limited to `rate` creates (Kie's `20/10` by
 * default) and the dispatcher told the same, keys allowed far beyond the bench's load; stopped at the
 * end of the run.
 */
export async function startPacedBenchStack(tableName: string, rate = '20/10'): Promise<PacedBenchStack> {
  note(`starting the local stack with the mock limited to ${rate.replace('/', ' creates per ')} s`);
  const [mockPort] = await freePorts(1);
  const stack = await spawnLocalStack({
    readyTimeoutMs: 90_000,
    stopTimeoutMs: 20_000,
    env: {
      TABLE_NAME: tableName,
      LOG_LEVEL: 'error',
      METRICS: 'off',
      DYNAMODB_ENDPOINT: '',
      MOCK_PROVIDER_PORT: String(mockPort),
      MOCK_PROVIDER_CREATE_RATE_LIMIT: rate,
      PROVIDER_CREATE_RATE_LIMIT: rate,
      KEY_RATE_LIMIT: '10000',
      KEY_BURST_LIMIT: '5000',
    },
  });
  onCleanup(() => stack.stop());
  const mock = `http://127.0.0.1:${mockPort}`;
  const doc = createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint });
  onCleanup(async () => doc.destroy());
  return {
    stack,
    mock,
    async control(body) {
      const answer = await fetch(`${mock}/__control`, { method: 'POST', body: JSON.stringify(body) });
      if (!answer.ok) throw new Error(`mock control answered ${answer.status}`);
    },
    store: { doc, tableName },
  };
}
