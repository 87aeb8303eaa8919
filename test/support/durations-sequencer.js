// Orders the test files slowest first from the first run on. Jest already puts the files that took
// longest first, but it knows their durations only from its own cache (one per checkout, under /tmp):
// a fresh clone, as CI runs, had none, and jest fell back to ordering by file size, which put small slow
// files (a bundled synth, a single fault scenario of minutes) at the end of the run, where they ran
// alone while the other workers were idle. Here a file jest has no duration for takes the one recorded
// in test/support/file-durations.json (the seconds of a whole run, `npm run test:order` writes it from
// the last run's test-results/durations.json); a file in neither still runs first, as jest runs new
// files first. Plain JavaScript: jest loads a sequencer without its transform.
const fs = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const RECORDED = path.join(__dirname, 'file-durations.json');

class DurationsSequencer extends Sequencer {
  /** @type {Record<string, number> | undefined} */
  #recorded;

  /** @param {import('@jest/test-result').Test} test */
  #recordedMs(test) {
    if (this.#recorded === undefined) {
      try {
        this.#recorded = JSON.parse(fs.readFileSync(RECORDED, 'utf8')).files;
      } catch {
        this.#recorded = {};
      }
    }
    const seconds = this.#recorded?.[path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/')];
    return typeof seconds === 'number' ? seconds * 1000 : undefined;
  }

  /** @param {import('@jest/test-result').Test} test */
  time(test) {
    return super.time(test) ?? this.#recordedMs(test);
  }
}

module.exports = DurationsSequencer;
