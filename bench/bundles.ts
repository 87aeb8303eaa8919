/**
 * Section 1: bundle size per Lambda, built with esbuild's JS API using the options of the
 * `GenerationFunction` construct (lib/generation-function.ts), in CJS and ESM, next to the floor: a
 * bundle holding only the DynamoDB document client. Section 2 loads the same files.
 */

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { type BuildOptions, build, type Metafile } from 'esbuild';
import { BUNDLE_OPTIONS, providerReadsDefine } from '../lib/bundle-options';
import { AUTHORIZER, ROUTES, SWEEPER } from '../lib/routes';
import { bytes, goal, note, out, ROOT, ratio, table } from './support';

export type BundleFormat = 'cjs' | 'esm';
export const FORMATS: readonly BundleFormat[] = ['cjs', 'esm'];

/** The floor's name in every table. */
export const FLOOR = 'floor: DynamoDB document client only';

/** Goal of issue 8: every function within this factor of the floor. */
export const SIZE_GOAL = 1.2;

export interface BuiltBundle {
  name: string;
  format: BundleFormat;
  file: string;
  bytes: number;
  gzipBytes: number;
  metafile: Metafile;
}

/**
 * The floor entry: creates the document client (on first call, as the handlers do through
 * `storeFromEnv`) and sends one GetCommand. Nothing else is imported.
 */
const FLOOR_SOURCE = `
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
let doc;
export const handler = async (event) => {
  doc ??= DynamoDBDocumentClient.from(new DynamoDBClient({}));
  return doc.send(new GetCommand({ TableName: process.env.TABLE_NAME, Key: { pk: event.pk, sk: event.sk } }));
};
`;

const ESM_BANNER =
  "import { createRequire as __createRequire } from 'node:module';const require = __createRequire(import.meta.url);";

/** The construct's bundling options (NodejsFunction passes them to esbuild), SDK bundled. */
export function constructOptions(format: BundleFormat): BuildOptions {
  const esm = format === 'esm';
  return {
    bundle: true,
    platform: 'node',
    ...BUNDLE_OPTIONS,
    mainFields: [...BUNDLE_OPTIONS.mainFields],
    sourcemap: false,
    external: [],
    format,
    ...(esm ? { banner: { js: ESM_BANNER } } : {}),
    metafile: true,
    write: true,
    logLevel: 'error',
  };
}

/** Every Lambda of the route table, the authorizer and the sweeper, then the floor. */
export function lambdas(): Array<{ name: string; entry?: string; define?: Record<string, string> }> {
  return [
    // As the stack builds them: submit's bundles leave the provider's state reading out.
    ...ROUTES.map((route) => ({
      name: route.name,
      entry: route.entry,
      define: { ...BUNDLE_OPTIONS.define, ...providerReadsDefine(route.needs) },
    })),
    { name: AUTHORIZER.name, entry: AUTHORIZER.entry },
    { name: SWEEPER.name, entry: SWEEPER.entry },
    { name: FLOOR },
  ];
}

let built: Promise<BuiltBundle[]> | undefined;

/** Builds every bundle once per run into a temporary directory (removed when the process exits). */
export function buildBundles(): Promise<BuiltBundle[]> {
  built ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'generation-bench-bundles-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    note(`building ${lambdas().length * FORMATS.length} bundles with esbuild into ${dir}`);
    const results: BuiltBundle[] = [];
    for (const format of FORMATS) {
      for (const lambda of lambdas()) {
        const file = join(dir, `${lambda.entry ? lambda.name : 'floor'}.${format === 'esm' ? 'mjs' : 'cjs'}`);
        const input: BuildOptions = lambda.entry
          ? { entryPoints: [join(ROOT, lambda.entry)] }
          : { stdin: { contents: FLOOR_SOURCE, loader: 'js', resolveDir: ROOT, sourcefile: 'floor-entry.js' } };
        const result = await build({
          ...constructOptions(format),
          ...(lambda.define ? { define: lambda.define } : {}),
          ...input,
          outfile: file,
        });
        const content = readFileSync(file);
        results.push({
          name: lambda.name,
          format,
          file,
          bytes: content.length,
          gzipBytes: gzipSync(content).length,
          metafile: result.metafile ?? { inputs: {}, outputs: {} },
        });
      }
    }
    return results;
  })();
  return built;
}

/** Alternatives to the construct's two formats, measured on get-task and the floor to decide by figures. */
export interface Variant {
  id: string;
  label: string;
  format: BundleFormat;
  overrides: BuildOptions;
  /** The SDK is not in the bundle: it is loaded from node_modules (as the Lambda runtime provides it). */
  sdkExternal?: boolean;
}

export const VARIANTS: readonly Variant[] = [
  { id: 'cjs', label: 'CJS (construct default)', format: 'cjs', overrides: {} },
  { id: 'esm', label: 'ESM (construct, format esm)', format: 'esm', overrides: {} },
  {
    id: 'cjs-module-first',
    label: 'CJS, mainFields module,main',
    format: 'cjs',
    overrides: { mainFields: ['module', 'main'] },
  },
  {
    // Both floors (without keepNames, as deployed, and with it), to show what keeping names would cost.
    id: 'cjs-keep-names',
    label: 'CJS with keepNames',
    format: 'cjs',
    overrides: { keepNames: true },
  },
  {
    id: 'cjs-sdk-external',
    label: 'CJS, SDK external (runtime copy)',
    format: 'cjs',
    overrides: { external: ['@aws-sdk/*'] },
    sdkExternal: true,
  },
];

/** The functions the variants are built for. */
export const VARIANT_TARGETS = ['get-task', FLOOR] as const;

export interface BuiltVariant extends BuiltBundle {
  variant: Variant;
}

let builtVariants: Promise<BuiltVariant[]> | undefined;

export function buildVariants(): Promise<BuiltVariant[]> {
  builtVariants ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'generation-bench-variants-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const results: BuiltVariant[] = [];
    for (const variant of VARIANTS) {
      for (const lambda of lambdas().filter((l) => (VARIANT_TARGETS as readonly string[]).includes(l.name))) {
        const file = join(
          dir,
          `${lambda.entry ? lambda.name : 'floor'}.${variant.id}.${variant.format === 'esm' ? 'mjs' : 'cjs'}`,
        );
        const input: BuildOptions = lambda.entry
          ? { entryPoints: [join(ROOT, lambda.entry)] }
          : { stdin: { contents: FLOOR_SOURCE, loader: 'js', resolveDir: ROOT, sourcefile: 'floor-entry.js' } };
        const result = await build({
          ...constructOptions(variant.format),
          ...variant.overrides,
          ...input,
          outfile: file,
        });
        const content = readFileSync(file);
        results.push({
          name: lambda.name,
          format: variant.format,
          file,
          bytes: content.length,
          gzipBytes: gzipSync(content).length,
          metafile: result.metafile ?? { inputs: {}, outputs: {} },
          variant,
        });
      }
    }
    return results;
  })();
  return builtVariants;
}

/** `node_modules/@scope/name/...` → `@scope/name`; project files → `(project code)`. */
function packageOf(input: string): string {
  const last = input.lastIndexOf('node_modules/');
  if (last < 0) return '(project code)';
  const [first = input, second = ''] = input.slice(last + 'node_modules/'.length).split('/');
  return first.startsWith('@') ? `${first}/${second}` : first;
}

function contributions(bundle: BuiltBundle): Array<{ input: string; bytes: number }> {
  const output = Object.values(bundle.metafile.outputs)[0];
  return Object.entries(output?.inputs ?? {})
    .map(([input, info]) => ({ input, bytes: info.bytesInOutput }))
    .sort((a, b) => b.bytes - a.bytes);
}

/** The functions every API call goes through: the budget is theirs (cold starts on the hot path). */
export const REQUEST_PATH = new Set(['submit-image', 'submit-video', 'get-task', AUTHORIZER.name]);

export async function bundleSizes(): Promise<void> {
  out('## 1. Bundle size per function');
  out();
  out(
    'esbuild JS API with the construct options: bundle, platform node, target node24, minify (no keepNames), ' +
      'no source map, AWS SDK bundled; ESM with `mainFields: module,main` and the `createRequire` banner. ' +
      'gzip at the default level (what a deployment zip roughly costs).',
  );
  out();
  const bundles = await buildBundles();
  const rows: Array<Array<string | number>> = [];
  let worst = 0;
  for (const lambda of lambdas()) {
    const cells: Array<string | number> = [lambda.name];
    for (const format of FORMATS) {
      const bundle = bundles.find((b) => b.name === lambda.name && b.format === format);
      const floor = bundles.find((b) => b.name === FLOOR && b.format === format);
      if (!bundle || !floor) throw new Error(`missing bundle ${lambda.name} (${format})`);
      const factor = bundle.bytes / floor.bytes;
      if (REQUEST_PATH.has(lambda.name)) worst = Math.max(worst, factor);
      cells.push(bytes(bundle.bytes), bytes(bundle.gzipBytes), ratio(bundle.bytes, floor.bytes));
    }
    rows.push(cells);
  }
  table(
    ['Function', 'CJS minified B', 'CJS gzip B', 'CJS vs floor', 'ESM minified B', 'ESM gzip B', 'ESM vs floor'],
    rows,
    ['l', 'r', 'r', 'r', 'r', 'r', 'r'],
  );
  goal(
    `request-path bundles (${[...REQUEST_PATH].join(', ')}) within ${SIZE_GOAL}x of the floor`,
    worst <= SIZE_GOAL,
    `the largest of them is ${worst.toFixed(2)}x the floor (minified bytes); functions off the request path (sign-in, key management with the API Gateway client) are listed but not held to it`,
  );

  const largest = bundles.filter((b) => b.name !== FLOOR).sort((a, b) => b.bytes - a.bytes)[0];
  const floorSame = bundles.find((b) => b.name === FLOOR && b.format === largest?.format);
  if (!largest || !floorSame) return;
  const inputs = contributions(largest);
  out(`### Top 10 inputs of the largest bundle: ${largest.name} (${largest.format.toUpperCase()})`);
  out();
  table(
    ['#', 'Input', 'Bytes in output', 'Share'],
    inputs
      .slice(0, 10)
      .map((item, i) => [
        i + 1,
        `\`${item.input}\``,
        bytes(item.bytes),
        `${((item.bytes / largest.bytes) * 100).toFixed(1)}%`,
      ]),
    ['r', 'l', 'r', 'r'],
  );

  // The function with the highest ratio shows best what it carries on top of the floor.
  const worstBundle = bundles
    .filter((b) => b.name !== FLOOR)
    .map((b) => ({ b, factor: b.bytes / (bundles.find((f) => f.name === FLOOR && f.format === b.format)?.bytes ?? 1) }))
    .sort((x, y) => y.factor - x.factor)[0]?.b;
  const worstFloor = bundles.find((b) => b.name === FLOOR && b.format === worstBundle?.format);
  if (!worstBundle || !worstFloor) return;
  const worstInputs = contributions(worstBundle);
  const byPackage = (list: Array<{ input: string; bytes: number }>) => {
    const sums = new Map<string, number>();
    for (const item of list) sums.set(packageOf(item.input), (sums.get(packageOf(item.input)) ?? 0) + item.bytes);
    return sums;
  };
  const mine = byPackage(worstInputs);
  const floor = byPackage(contributions(worstFloor));
  const label = `${worstBundle.name} (${worstBundle.format.toUpperCase()})`;
  const packages = [...mine.entries()]
    .map(([name, size]) => ({ name, size, floor: floor.get(name) ?? 0 }))
    .filter((p) => p.size !== p.floor)
    .sort((a, b) => b.size - b.floor - (a.size - a.floor))
    .slice(0, 10);
  out(`### What ${label}, the highest ratio, carries on top of the floor, by package`);
  out();
  table(
    ['Package', `${worstBundle.name} B`, 'floor B', 'Excess B'],
    packages.map((p) => [p.name, bytes(p.size), bytes(p.floor), bytes(p.size - p.floor)]),
    ['l', 'r', 'r', 'r'],
  );
  out(`### Project code of ${label}, top 10 files`);
  out();
  table(
    ['File', 'Bytes in output'],
    worstInputs
      .filter((item) => packageOf(item.input) === '(project code)')
      .slice(0, 10)
      .map((item) => [`\`${item.input}\``, bytes(item.bytes)]),
    ['l', 'r'],
  );

  const variants = await buildVariants();
  out('### Variants, to choose the format and SDK packaging by measurement');
  out();
  out(
    'Same options, one thing changed. "SDK external" bundles leave `@aws-sdk/*` to the Lambda runtime ' +
      '(its size excludes the SDK the runtime loads from disk; section 2 loads it from node_modules).',
  );
  out();
  table(
    ['Variant', 'get-task B', 'get-task gzip B', 'floor B', 'get-task vs floor'],
    VARIANTS.map((variant) => {
      const fn = variants.find((b) => b.variant === variant && b.name === 'get-task');
      const floor = variants.find((b) => b.variant === variant && b.name === FLOOR);
      if (!fn || !floor) throw new Error(`missing variant ${variant.id}`);
      return [variant.label, bytes(fn.bytes), bytes(fn.gzipBytes), bytes(floor.bytes), ratio(fn.bytes, floor.bytes)];
    }),
    ['l', 'r', 'r', 'r', 'r'],
  );
}
