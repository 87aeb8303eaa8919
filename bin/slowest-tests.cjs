#!/usr/bin/env node
/**
 * `npm run test:slowest [-- N]`: the N (default 10) slowest test files of the last jest run, from
 * test-results/durations.json, which test/support/durations-reporter.js writes on every run.
 */
const { readFileSync } = require('node:fs');
const { resolve } = require('node:path');

const file = resolve(__dirname, '..', 'test-results', 'durations.json');
const count = Number(process.argv[2] ?? 10);
if (!Number.isInteger(count) || count < 1) {
  process.stderr.write('usage: npm run test:slowest [-- <count>]\n');
  process.exit(2);
}
let run;
try {
  run = JSON.parse(readFileSync(file, 'utf8'));
} catch {
  process.stderr.write(`No durations yet (${file}): run npm test, or any jest run, first.\n`);
  process.exit(1);
}
const rows = run.files.slice(0, count);
const width = Math.max(...rows.map((row) => row.file.length), 4);
process.stdout.write(
  `The ${rows.length} slowest of ${run.files.length} test files, run finished ${run.finishedAt} ` +
    `(${run.wallSeconds} s wall clock, ${run.tests} tests, ${run.failed} failed):\n`,
);
for (const row of rows) {
  process.stdout.write(
    `${String(row.seconds.toFixed(1)).padStart(7)} s  ${row.file.padEnd(width)}  ${row.project} (${row.tests} tests)\n`,
  );
}
