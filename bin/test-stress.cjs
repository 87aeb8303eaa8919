#!/usr/bin/env node
/**
 * `npm run test:stress [-- <jest args>]`: the race, bookkeeping and property tests at full scale. They are the
 * test files that size themselves with test/support/scale.ts; this runs exactly those, with
 * TEST_SCALE=stress, so a new test joins the stress run by importing `atScale`.
 */
const { spawnSync } = require('node:child_process');
const { readdirSync, readFileSync } = require('node:fs');
const { join, relative, resolve } = require('node:path');

const ROOT = resolve(__dirname, '..');

/** @param {string} dir @returns {string[]} */
function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const scaled = testFiles(join(ROOT, 'test')).filter((file) =>
  /from '(\.\.\/)+support\/scale'/.test(readFileSync(file, 'utf8')),
);
if (scaled.length === 0) {
  process.stderr.write('No test file imports test/support/scale.ts: nothing to stress.\n');
  process.exit(1);
}
const files = scaled.map((file) => relative(ROOT, file));
process.stdout.write(`Stress run (TEST_SCALE=stress) of ${files.length} files:\n  ${files.join('\n  ')}\n`);
const run = spawnSync(
  process.execPath,
  [require.resolve('jest/bin/jest'), '--runTestsByPath', ...files, ...process.argv.slice(2)],
  { cwd: ROOT, stdio: 'inherit', env: { ...process.env, TEST_SCALE: 'stress' } },
);
process.exit(run.status ?? 1);
