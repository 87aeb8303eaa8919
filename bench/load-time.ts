/**
 * Section 2: module load time of every bundle in a fresh Node process, next to an empty module and the
 * DynamoDB-client-only floor, in CJS and ESM. Each run is `node -e` that requires (or imports) the
 * bundle between two `performance.now()` readings; runs are interleaved across bundles so that drift
 * on the machine spreads evenly.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type BundleFormat,
  buildBundles,
  buildVariants,
  FLOOR,
  FORMATS,
  lambdas,
  REQUEST_PATH,
  VARIANTS,
} from './bundles';
import { goal, median, ms, note, out, percentile, ROOT, ratio, table } from './support';

/** Runs per bundle and format. */
export const LOAD_RUNS = Number(process.env.BENCH_LOAD_RUNS) || 30;
/** Goal of issue 8: load time within this factor of the floor bundle. */
export const LOAD_GOAL = 1.2;
const EMPTY = 'empty module';

const CJS_PROBE =
  'const a=performance.now();require(process.argv[1]);const b=performance.now();' +
  'process.stdout.write(JSON.stringify([b-a,b]))';
const ESM_PROBE =
  'const a=performance.now();await import(process.argv[1]);const b=performance.now();' +
  'process.stdout.write(JSON.stringify([b-a,b]))';

/** One fresh process: [load ms, ms since process start when loaded]. */
function probe(format: BundleFormat, file: string, env: NodeJS.ProcessEnv): [number, number] {
  const args =
    format === 'cjs' ? ['-e', CJS_PROBE, file] : ['--input-type=module', '-e', ESM_PROBE, pathToFileURL(file).href];
  let output: string;
  try {
    output = execFileSync(process.execPath, args, { env, timeout: 20_000, encoding: 'utf8' });
  } catch (error) {
    // What the probe printed says why it failed (a module that throws at load, a missing variable).
    const stderr = (error as { stderr?: unknown }).stderr;
    throw new Error(`probe of ${file} failed: ${typeof stderr === 'string' ? stderr.trim().slice(0, 2000) : error}`);
  }
  const parsed = JSON.parse(output) as unknown;
  if (!Array.isArray(parsed) || typeof parsed[0] !== 'number' || typeof parsed[1] !== 'number') {
    throw new Error(`unexpected probe output: ${output}`);
  }
  return [parsed[0], parsed[1]];
}

export async function loadTimes(): Promise<void> {
  out('## 2. Module load time per bundle (fresh Node process)');
  out();
  const bundles = await buildBundles();
  const variants = await buildVariants();
  const dir = mkdtempSync(join(tmpdir(), 'generation-bench-empty-'));
  try {
    writeFileSync(join(dir, 'empty.cjs'), '');
    writeFileSync(join(dir, 'empty.mjs'), '');
    // A clean environment: no tsx loader (NODE_OPTIONS) in the probes, and what a Lambda would have.
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      AWS_REGION: 'us-east-1',
      TABLE_NAME: 'generation',
      LOG_LEVEL: 'error',
      METRICS: 'off',
    };
    // The SDK-external variant finds `@aws-sdk/*` in the repository's node_modules, unbundled, as a
    // Lambda finds the runtime's copy.
    const sdkEnv: NodeJS.ProcessEnv = { ...env, NODE_PATH: join(ROOT, 'node_modules') };
    const targets: Array<{
      name: string;
      format: BundleFormat;
      file: string;
      variant?: string;
      env?: NodeJS.ProcessEnv;
    }> = FORMATS.flatMap((format) => [
      { name: EMPTY, format, file: join(dir, format === 'cjs' ? 'empty.cjs' : 'empty.mjs') },
      ...lambdas().map((lambda) => {
        const bundle = bundles.find((b) => b.name === lambda.name && b.format === format);
        if (!bundle) throw new Error(`missing bundle ${lambda.name} (${format})`);
        return { name: lambda.name, format, file: bundle.file };
      }),
    ]);
    for (const built of variants) {
      if (built.variant.id === 'cjs' || built.variant.id === 'esm') continue;
      targets.push({
        name: built.name,
        format: built.format,
        file: built.file,
        variant: built.variant.id,
        env: built.variant.sdkExternal ? sdkEnv : env,
      });
    }
    const samples = new Map(targets.map((t) => [t, { load: [] as number[], sinceStart: [] as number[] }]));
    note(`${LOAD_RUNS} fresh processes for each of ${targets.length} modules, interleaved`);
    // One warm-up pass fills the OS file cache, as a warm Lambda host would have it.
    for (const target of targets) probe(target.format, target.file, target.env ?? env);
    for (let run = 0; run < LOAD_RUNS; run++) {
      for (const target of targets) {
        const [load, sinceStart] = probe(target.format, target.file, target.env ?? env);
        const entry = samples.get(target);
        entry?.load.push(load);
        entry?.sinceStart.push(sinceStart);
      }
    }

    out(
      `${LOAD_RUNS} runs per module after one warm-up pass; "load" is the \`require\`/\`import()\` of the bundle ` +
        'alone, "ready" is the time from process start until the module is loaded (Node bootstrap included). ' +
        `Node ${process.version} here; Lambda runs Node 24.`,
    );
    out();
    let worst = 0;
    const rows: Array<Array<string | number>> = [];
    for (const format of FORMATS) {
      const floor = [...samples.entries()].find(([t]) => t.name === FLOOR && t.format === format)?.[1];
      if (!floor) throw new Error('missing floor samples');
      const floorMedian = median(floor.load);
      for (const [target, s] of samples) {
        if (target.format !== format || target.variant) continue;
        const m = median(s.load);
        // The budget is the request path's, in the format deployed (CJS, the construct's default): a cold
        // start there delays an API answer. Workers and ESM builds are listed for comparison.
        if (format === 'cjs' && REQUEST_PATH.has(target.name)) worst = Math.max(worst, m / floorMedian);
        rows.push([
          format.toUpperCase(),
          target.name,
          ms(m),
          ms(percentile(s.load, 90)),
          ratio(m, floorMedian),
          ms(median(s.sinceStart)),
        ]);
      }
    }
    table(['Format', 'Module', 'load median ms', 'load p90 ms', 'vs floor (median)', 'ready median ms'], rows, [
      'l',
      'l',
      'r',
      'r',
      'r',
      'r',
    ]);
    goal(
      `request-path load time (${[...REQUEST_PATH].join(', ')}; CJS, as deployed) within ${LOAD_GOAL}x of the floor`,
      worst <= LOAD_GOAL,
      `slowest of them is ${worst.toFixed(2)}x the floor (median)`,
    );

    const formatMedian = (format: BundleFormat, name: string) =>
      median([...samples.entries()].find(([t]) => t.name === name && t.format === format)?.[1].load ?? []);
    out('CJS vs ESM, per function (median load ms):');
    out();
    table(
      ['Module', 'CJS', 'ESM', 'ESM / CJS'],
      lambdas().map((lambda) => {
        const cjs = formatMedian('cjs', lambda.name);
        const esm = formatMedian('esm', lambda.name);
        return [lambda.name, ms(cjs), ms(esm), ratio(esm, cjs)];
      }),
      ['l', 'r', 'r', 'r'],
    );

    const variantMedian = (variant: string, name: string) => {
      const entry = [...samples.entries()].find(([t]) =>
        variant === 'cjs' || variant === 'esm'
          ? t.name === name && t.format === variant && !t.variant
          : t.name === name && t.variant === variant,
      );
      return median(entry?.[1].load ?? []);
    };
    out('Variants (median load ms), see section 1 for their sizes:');
    out();
    table(
      ['Variant', 'get-task', 'floor', 'get-task vs floor', 'get-task vs CJS default'],
      VARIANTS.map((variant) => {
        const fn = variantMedian(variant.id, 'get-task');
        const floor = variantMedian(variant.id, FLOOR);
        return [variant.label, ms(fn), ms(floor), ratio(fn, floor), ratio(fn, variantMedian('cjs', 'get-task'))];
      }),
      ['l', 'r', 'r', 'r', 'r'],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
