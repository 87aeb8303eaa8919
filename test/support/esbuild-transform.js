/**
 * Jest's transform for every project: esbuild's `transformSync` turns each TypeScript file (and the
 * ESM-only @middy packages, which jest cannot require as they are shipped) into CommonJS for Node 20+.
 * Type-checking stays with `npm run build` (`tsc --noEmit`), as with the ts-jest it replaces.
 *
 * Why not ts-jest: each jest worker loaded the TypeScript compiler and transpiled every file through
 * it, which on a fresh clone (no jest cache, as CI runs) cost most of a short file's CPU; esbuild
 * transpiles the same files in a fraction of it (figures in docs/development/testing.md).
 *
 * One file at a time, like ts-jest's `isolatedModules`: which the tsconfig already requires of every
 * source (`isolatedModules: true`), so `import type`, type-only re-exports and enums compile alone.
 * Plain JavaScript: jest loads a transformer without a transform.
 */
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const { transformSync, version: esbuildVersion } = require('esbuild');

/** The esbuild options every file gets (the loader is chosen per file). */
const BASE_OPTIONS = {
  format: 'cjs',
  // The oldest Node the tests run on (`npm test` uses the pinned Node 24; CI images may lag).
  target: 'node20',
  // Inline, so jest's code frames and stack traces point at the lines of the source file.
  sourcemap: 'inline',
  sourcesContent: false,
  // `await import('...')` becomes a `require` inside a promise, as TypeScript compiles it for CommonJS:
  // jest runs modules in a vm context whose dynamic import needs --experimental-vm-modules.
  supported: { 'dynamic-import': false },
  // Class fields as TypeScript compiles them for the tsconfig's ES2022 target.
  tsconfigRaw: { compilerOptions: { useDefineForClassFields: true } },
};

// This file's own text too: a change to how files are transformed invalidates what jest cached.
const TRANSFORM_KEY = `${esbuildVersion}\0${JSON.stringify(BASE_OPTIONS)}\0${readFileSync(__filename, 'utf8')}`;

/** `.ts` as TypeScript, `.js` (the @middy modules) as JavaScript. */
function loaderFor(filename) {
  if (filename.endsWith('.ts') || filename.endsWith('.mts') || filename.endsWith('.cts')) return 'ts';
  return 'js';
}

module.exports = {
  /**
   * @param {string} source
   * @param {string} filename
   * @returns {{ code: string }}
   */
  process(source, filename) {
    const { code } = transformSync(source, { ...BASE_OPTIONS, loader: loaderFor(filename), sourcefile: filename });
    return { code };
  },

  /**
   * What jest caches a transformed file under: its content, its path (the source map names it), the
   * esbuild version, these options and this file, and the instrumentation flag jest passes.
   * @param {string} source
   * @param {string} filename
   * @param {{ instrument?: boolean }} [options]
   */
  getCacheKey(source, filename, options) {
    return createHash('sha256')
      .update(source)
      .update('\0')
      .update(filename)
      .update('\0')
      .update(TRANSFORM_KEY)
      .update('\0')
      .update(options?.instrument ? 'instrument' : '')
      .digest('hex');
  },
};
