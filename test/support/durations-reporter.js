// A jest reporter that records how long each test file took, on every run: test-results/durations.json
// (the last run, slowest first) and one line per run appended to test-results/durations-history.jsonl.
// `npm run test:slowest` prints the ten slowest files of the last run. Plain JavaScript: jest loads
// reporters without its transform.
const fs = require('node:fs');
const path = require('node:path');

class DurationsReporter {
  /** @param {import('@jest/types').Config.GlobalConfig} globalConfig */
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    /** @type {{ file: string, project: string, seconds: number, tests: number, failed: number }[]} */
    this.files = [];
    this.startedAt = Date.now();
  }

  /** @param {{ context: { config: { displayName?: { name: string } } } }} test @param {import('@jest/test-result').TestResult} result */
  onTestResult(test, result) {
    const { start, end } = result.perfStats;
    this.files.push({
      file: path.relative(this.rootDir, result.testFilePath),
      project: test.context.config.displayName?.name ?? '',
      seconds: Math.round((end - start) / 100) / 10,
      tests: result.numPassingTests + result.numFailingTests,
      failed: result.numFailingTests + (result.testExecError ? 1 : 0),
    });
  }

  /** @param {unknown} _contexts @param {import('@jest/test-result').AggregatedResult} results */
  onRunComplete(_contexts, results) {
    const dir = path.join(this.rootDir, 'test-results');
    fs.mkdirSync(dir, { recursive: true });
    const run = {
      finishedAt: new Date().toISOString(),
      wallSeconds: Math.round((Date.now() - this.startedAt) / 1000),
      suites: results.numTotalTestSuites,
      tests: results.numTotalTests,
      failed: results.numFailedTests,
      files: [...this.files].sort((a, b) => b.seconds - a.seconds),
    };
    fs.writeFileSync(path.join(dir, 'durations.json'), `${JSON.stringify(run, null, 1)}\n`);
    fs.appendFileSync(path.join(dir, 'durations-history.jsonl'), `${JSON.stringify(run)}\n`);
  }
}

module.exports = DurationsReporter;
