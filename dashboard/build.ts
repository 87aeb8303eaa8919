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
import { copyFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
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

if (require.main === module) {
  try {
    process.stdout.write(`Dashboard built in ${buildDashboard()}\n`);
  } catch (error) {
    process.stderr.write(`Dashboard build failed: ${(error as Error).message}\n`);
    process.exit(1);
  }
}
