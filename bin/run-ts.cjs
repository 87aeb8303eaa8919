#!/usr/bin/env node
/**
 * `node bin/run-ts.cjs <entry.ts> [args...]` (`npm start`, `npm run bench`): runs a TypeScript entry of
 * this repository as one bundled CommonJS file, built with esbuild when a source changed.
 *
 * Why not tsx: middy 7 ships as ES modules only (its package `exports` have just an `import`
 * condition), and tsx runs this repository's TypeScript as CommonJS, whose `require` cannot resolve
 * it. esbuild resolves `import` statements with the `import` condition and bundles middy in, exactly as
 * it does for the Lambda functions. It also spares every start tsx's compile (about a second).
 * Every other package stays external and loads from node_modules as before.
 */
const { relative, resolve } = require('node:path');
const { ROOT, bundleWhenStale, packagesExternalExcept } = require('./bundle-when-stale.cjs');

// `--build` only builds (test set-ups, so that parallel starts find the bundle ready).
const buildOnly = process.argv[2] === '--build';
const entry = process.argv[buildOnly ? 3 : 2];
if (!entry?.endsWith('.ts')) {
  process.stderr.write('usage: node bin/run-ts.cjs [--build] <entry.ts> [args...]\n');
  process.exit(2);
}
const name = relative(ROOT, resolve(entry)).replace(/\.ts$/, '').replace(/[\\/]/g, '-');
const out = bundleWhenStale(entry, name, { external: packagesExternalExcept(/^@middy\//) });
if (buildOnly) process.exit(0);
// The program sees its own arguments, as if it had been started directly.
process.argv.splice(1, 2, out);
// Stack traces name the TypeScript sources (the bundle carries its source map).
process.setSourceMapsEnabled(true);
require(out);
