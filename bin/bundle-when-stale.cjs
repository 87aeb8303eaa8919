/**
 * Builds a TypeScript entry of this repository into one CommonJS file with esbuild, only when a source
 * is newer than the file (a fresh clone, an edit, a dependency change). Plain CommonJS so that Node
 * runs it as is. Shared by `bin/run-ts.cjs` (`npm start`, `npm run bench`) and `bin/run-admin.cjs`.
 */
const { mkdirSync, readdirSync, renameSync, statSync } = require('node:fs');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
/** Every folder whose TypeScript a bundle may hold, and the files that pin its dependencies. */
const SOURCE_DIRS = ['bin', 'functions', 'local', 'lib', 'bench', 'dashboard', join('test', 'support')];
const SOURCE_FILES = ['package.json', 'package-lock.json'];

/** The newest modification time of the sources (TypeScript files and the package files). */
function newestSource() {
  let newest = 0;
  for (const file of SOURCE_FILES) newest = Math.max(newest, statSync(join(ROOT, file)).mtimeMs);
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const dir of SOURCE_DIRS) walk(join(ROOT, dir));
  return newest;
}

function builtAt(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}

/**
 * `dist/<name>.cjs` built from `entry` (relative to the repository root) with `options` added to
 * esbuild's, rebuilt when stale. Returns the file's absolute path.
 * @param {string} entry
 * @param {string} name
 * @param {import('esbuild').BuildOptions} options
 */
function bundleWhenStale(entry, name, options = {}) {
  const out = join(ROOT, 'dist', `${name}.cjs`);
  if (builtAt(out) >= newestSource()) return out;
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  // A temporary name, then a rename: two processes started at once never run a half-written bundle.
  const temporary = `${out}.${process.pid}.tmp`;
  require('esbuild').buildSync({
    entryPoints: [join(ROOT, entry)],
    outfile: temporary,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    sourcemap: 'inline',
    logLevel: 'error',
    ...options,
  });
  renameSync(temporary, out);
  return out;
}

/**
 * esbuild's `external` for every package this repository depends on except those matching `bundled`:
 * they load from node_modules at run time, as under tsx, and the bundle holds only this repository's
 * code (a build of well under a second). A list, not a plugin: plugins need esbuild's async API.
 * @param {RegExp} bundled packages to bundle all the same
 * @returns {string[]}
 */
function packagesExternalExcept(bundled) {
  const { dependencies = {}, devDependencies = {} } = require('../package.json');
  return Object.keys({ ...dependencies, ...devDependencies })
    .filter((name) => !bundled.test(name))
    .flatMap((name) => [name, `${name}/*`]);
}

module.exports = { ROOT, bundleWhenStale, packagesExternalExcept };
