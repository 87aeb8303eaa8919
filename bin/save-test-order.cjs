#!/usr/bin/env node
/**
 * `npm run test:order`: records each test file's duration from the last jest run
 * (test-results/durations.json) into test/support/file-durations.json, the committed record by which
 * test/support/durations-sequencer.js starts the slowest files first on a checkout jest has no cache
 * for (a fresh clone, CI). Files the last run did not run keep their recorded duration; files that no
 * longer exist are dropped. Run it after a whole `npm test` and commit the file.
 */
const { existsSync, readFileSync, writeFileSync } = require('node:fs');
const { resolve } = require('node:path');

const root = resolve(__dirname, '..');
const last = resolve(root, 'test-results', 'durations.json');
const recorded = resolve(root, 'test', 'support', 'file-durations.json');

let run;
try {
  run = JSON.parse(readFileSync(last, 'utf8'));
} catch {
  process.stderr.write(`No durations yet (${last}): run npm test first.\n`);
  process.exit(1);
}
let files = {};
try {
  files = JSON.parse(readFileSync(recorded, 'utf8')).files ?? {};
} catch {
  // A first record.
}
for (const row of run.files) files[row.file] = row.seconds;
const kept = Object.entries(files)
  .filter(([file]) => existsSync(resolve(root, file)))
  .sort(([, a], [, b]) => b - a);
writeFileSync(
  recorded,
  `${JSON.stringify({ updatedFrom: run.finishedAt, files: Object.fromEntries(kept) }, null, 2)}\n`,
);
process.stdout.write(
  `${kept.length} files recorded in ${recorded} (last run ${run.finishedAt}, ${run.files.length} files)\n`,
);
