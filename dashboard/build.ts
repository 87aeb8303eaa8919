/**
 * Builds the dashboard: `dashboard/src` (TypeScript, HTML, CSS) to `dashboard/dist`, one script and one
 * stylesheet, no source maps, no inline code (the CSP forbids it). Run by `npm run build:dashboard`,
 * by `npm start` (local/start.ts) before it serves the folder, and by `cdk synth`/`deploy` as the
 * local bundling step of the dashboard bucket's deployment. Synchronous because CDK's local bundling
 * is; esbuild takes a fraction of a second.
 *
 * Several processes may build at once (the e2e and browser test projects each start a local stack):
 * every file is written under a temporary name and renamed, so no reader ever sees half a file.
 */
import { copyFileSync, mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildSync } from 'esbuild';

/** From dashboard/ or, bundled into the local stack (bin/run-ts.cjs), from dist/: one level down either way. */
const DASHBOARD = resolve(__dirname, '..', 'dashboard');
/** The sources (what the deployment's asset hash covers). */
export const DASHBOARD_SRC = join(DASHBOARD, 'src');
/** Where `npm start` serves the built files from. */
export const DASHBOARD_DIST = join(DASHBOARD, 'dist');

const STATIC_FILES = ['index.html', 'app.css', 'favicon.svg'];

function writeAtomically(file: string, write: (temporary: string) => void): void {
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  write(temporary);
  renameSync(temporary, file);
}

/** Builds into `outDir` (default `dashboard/dist`); returns the folder. */
export function buildDashboard(outDir: string = DASHBOARD_DIST): string {
  mkdirSync(outDir, { recursive: true });
  const result = buildSync({
    entryPoints: [join(DASHBOARD_SRC, 'main.ts')],
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    write: false,
    outfile: join(outDir, 'app.js'),
    legalComments: 'none',
    logLevel: 'silent',
  });
  for (const output of result.outputFiles) {
    writeAtomically(output.path, (temporary) => writeFileSync(temporary, output.contents));
  }
  for (const name of STATIC_FILES) {
    writeAtomically(join(outDir, name), (temporary) => copyFileSync(join(DASHBOARD_SRC, name), temporary));
  }
  return outDir;
}

/** The newest modification time of the sources (a missing folder counts as never). */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * `buildDashboard` unless `outDir` is newer than every source: `npm start` calls it on each start, and
 * an esbuild run there competes for the CPU with DynamoDB Local's JVM starting.
 */
export function buildDashboardWhenStale(outDir: string = DASHBOARD_DIST): string {
  const builtAt = Math.min(
    ...['app.js', ...STATIC_FILES].map((name) => {
      try {
        return statSync(join(outDir, name)).mtimeMs;
      } catch {
        return -1;
      }
    }),
  );
  return builtAt >= newestMtime(DASHBOARD_SRC) ? outDir : buildDashboard(outDir);
}

if (require.main === module) {
  try {
    process.stdout.write(`Dashboard built in ${buildDashboard()}\n`);
  } catch (error) {
    process.stderr.write(`Dashboard build failed: ${(error as Error).message}\n`);
    process.exit(1);
  }
}
