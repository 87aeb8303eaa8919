/**
 * The one bundled synth the infra tests share. Bundling runs esbuild once per function (about forty) and
 * builds the dashboard: on a loaded 2-core machine one bundled synth took over two minutes of CPU, and
 * two files (stack.test.ts, environment.test.ts) each ran one. Now the first file to ask synthesizes
 * the default stack (cdk.json's context, as `cdk synth` does) with its bundles into
 * `test-results/infra-synth/<key>/`, and every other file, in any worker, waits for it and reads the
 * same assembly. The key is a hash of everything a bundle or the template is built from (the sources
 * of lib/, functions/, contract/, dashboard/, bin/, cdk.json, the lock file, this file and support.ts),
 * so a later run with unchanged sources reuses it and a changed source builds anew.
 *
 * The files' own assertions on the template and the constructs run on their own synth without
 * bundles (`synthesize(context, { bundle: false })`, a few seconds): the bundles do not depend on the
 * context those files vary but for the provider profile and LocalStack, which only the default-context
 * files read here.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { GenerationFunction } from '../../lib/generation-function';
import { logicalIdOf, REPO_ROOT, synthesize } from './support';

/** What the files read from the shared assembly. */
export interface BundledAssembly {
  /** The cloud assembly's directory (its `asset.<hash>/` directories hold the bundles). */
  directory: string;
  /** The stack's template, as synthesized with its bundles. */
  resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
  /** Each project function's construct path and the bundle file CDK built for it. */
  bundles: { path: string; file: string }[];
}

/** Where the assemblies are kept (gitignored with the rest of test-results/). */
const CACHE_ROOT = path.join(REPO_ROOT, 'test-results', 'infra-synth');
/** Sources whose change changes a bundle or the template. */
const SOURCE_DIRS = ['lib', 'functions', 'contract', 'dashboard', 'bin'];
const SOURCE_FILES = [
  'cdk.json',
  'package-lock.json',
  'tsconfig.json',
  'docs/openapi.json',
  'test/infra/support.ts',
  'test/infra/bundled-assembly.ts',
];
/**
 * How long a file waits for another worker's synth, and the jest timeout of a test or hook that asks
 * for the assembly (it may be the one to build it): one synth took 150 s in a whole run, and over ten
 * minutes beside other test runs at a load of 35.
 */
export const BUNDLED_ASSEMBLY_TIMEOUT_MS = 1_200_000;
const WAIT_MS = BUNDLED_ASSEMBLY_TIMEOUT_MS - 60_000;
const MANIFEST = 'bundled-assembly.json';

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.name !== 'node_modules' && entry.name !== 'dist')
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      return entry.isDirectory() ? filesUnder(full) : entry.isFile() ? [full] : [];
    });
}

/** A hash of the sources: names and contents, in a fixed order. */
function sourcesKey(): string {
  const hash = createHash('sha256');
  const files = [
    ...SOURCE_DIRS.flatMap((dir) => filesUnder(path.join(REPO_ROOT, dir))),
    ...SOURCE_FILES.map((file) => path.join(REPO_ROOT, file)).filter((file) => fs.existsSync(file)),
  ].sort();
  for (const file of files) {
    hash.update(path.relative(REPO_ROOT, file));
    hash.update('\0');
    hash.update(fs.readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 24);
}

/** The pid of the process holding the lock; 0 while it has not written it yet, or once it is gone. */
function lockOwner(lock: string): number {
  try {
    return Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8')) || 0;
  } catch {
    return 0;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Synthesizes into `target` (through a directory of its own, renamed when complete) and writes the manifest. */
function build(target: string): void {
  const building = `${target}.building-${process.pid}`;
  fs.rmSync(building, { recursive: true, force: true });
  const service = synthesize({}, { bundle: true, outdir: building, builtinValidation: true });
  const resources = service.template.toJSON().Resources as BundledAssembly['resources'];
  const functions = service.stack.node.findAll().filter((node) => node instanceof GenerationFunction);
  const bundles = functions.map((fn) => {
    const key = (resources[logicalIdOf(service, fn)]?.Properties.Code as { S3Key?: string } | undefined)?.S3Key;
    if (!key) throw new Error(`no code for ${fn.node.path}`);
    const dir = `asset.${key.replace(/\.zip$/, '')}`;
    const file = ['index.js', 'index.mjs'].find((name) => fs.existsSync(path.join(building, dir, name)));
    if (!file) throw new Error(`no bundle for ${fn.node.path} in ${dir}`);
    return { path: fn.node.path, file: path.join(dir, file) };
  });
  fs.writeFileSync(path.join(building, MANIFEST), JSON.stringify({ resources, bundles }));
  try {
    fs.renameSync(building, target);
  } catch (error) {
    // Another process (one that took over a lock it thought abandoned) completed the same sources first.
    fs.rmSync(building, { recursive: true, force: true });
    if (!fs.existsSync(path.join(target, MANIFEST))) throw error;
  }
  // Assemblies of earlier sources are no longer wanted, nor what killed builders left.
  for (const name of fs.readdirSync(CACHE_ROOT)) {
    const builder = /^[0-9a-f]{24}\.building-(\d+)$/.exec(name)?.[1];
    const stale = builder ? !isAlive(Number(builder)) : /^[0-9a-f]{24}$/.test(name);
    if (stale && path.join(CACHE_ROOT, name) !== target) {
      fs.rmSync(path.join(CACHE_ROOT, name), { recursive: true, force: true });
    }
  }
}

function read(target: string): BundledAssembly {
  const manifest = JSON.parse(fs.readFileSync(path.join(target, MANIFEST), 'utf8')) as {
    resources: BundledAssembly['resources'];
    bundles: { path: string; file: string }[];
  };
  return {
    directory: target,
    resources: manifest.resources,
    bundles: manifest.bundles.map((bundle) => ({ path: bundle.path, file: path.join(target, bundle.file) })),
  };
}

/**
 * The default stack synthesized with its bundles, built by the first file that asks (a lock directory
 * holding its pid keeps the others waiting; a lock whose process is gone is taken over).
 */
export async function bundledAssembly(): Promise<BundledAssembly> {
  fs.mkdirSync(CACHE_ROOT, { recursive: true });
  const target = path.join(CACHE_ROOT, sourcesKey());
  const lock = `${target}.lock`;
  const deadline = Date.now() + WAIT_MS;
  while (!fs.existsSync(path.join(target, MANIFEST))) {
    try {
      fs.mkdirSync(lock);
    } catch {
      const owner = lockOwner(lock);
      if (owner > 0 && !isAlive(owner)) fs.rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`no bundled assembly after ${WAIT_MS} ms (lock ${lock})`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      continue;
    }
    try {
      fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
      if (!fs.existsSync(path.join(target, MANIFEST))) build(target);
    } finally {
      fs.rmSync(lock, { recursive: true, force: true });
    }
  }
  return read(target);
}
