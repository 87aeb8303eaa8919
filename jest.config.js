// One config style for every project: esbuild transpiles TypeScript, file by file
// (test/support/esbuild-transform.js; type-checking is `npm run build`), and the ESM-only @middy
// packages, which jest cannot require as they are shipped.
const { SUITE_WORKERS } = require('./test/support/machine-slots');

const esbuildTransform = '<rootDir>/test/support/esbuild-transform.js';

/** @param {string} name @param {Partial<import('jest').Config>} extra @returns {import('jest').Config} */
const project = (name, extra = {}) => ({
  displayName: name,
  // Jest's Node environment, entered holding one of the machine's test slots: copies of the suite side
  // by side run at most as many files at once as one copy does (test/support/machine-slots.js).
  testEnvironment: '<rootDir>/test/support/shared-machine-environment.js',
  roots: [`<rootDir>/test/${name}`],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.[jt]s$': esbuildTransform },
  transformIgnorePatterns: ['/node_modules/(?!@middy/)'],
  // middy 7's package exports offer only an `import` condition, which jest's CommonJS resolver does
  // not match: point it at the module file, which the transform then turns into CommonJS like our own.
  moduleNameMapper: { '^@middy/([a-z-]+)$': '<rootDir>/node_modules/@middy/$1/index.js' },
  ...extra,
});

/** @type {import('jest').Config} */
module.exports = {
  // Real engines and child processes on a 2-core machine: a generous limit per test (files that need
  // more say so). Speed is measured in bench/, never asserted here.
  testTimeout: 60_000,
  // Most test time is spent waiting (on DynamoDB Local, the mock provider's delays, refresh intervals,
  // child stacks), not computing: four workers on two cores keep both busy. One worker ran the suite
  // in band, file after file, in about 38 minutes; `--maxWorkers` on the command line overrides this.
  maxWorkers: SUITE_WORKERS,
  // The slowest files first, also on a fresh clone (no jest cache): test/support/durations-sequencer.js.
  testSequencer: '<rootDir>/test/support/durations-sequencer.js',
  // Every run records each file's duration (test-results/durations.json); `npm run test:slowest` reads it.
  reporters: ['default', '<rootDir>/test/support/durations-reporter.js'],
  projects: [
    project('unit'),
    project('integration', {
      globalSetup: '<rootDir>/test/support/dynamodb-global-setup.ts',
      globalTeardown: '<rootDir>/test/support/dynamodb-global-teardown.ts',
    }),
    project('infra'),
    // The dashboard in Debian's Chromium (playwright-core): the setup stops the run at once, saying how
    // to get Chromium, when there is none.
    project('browser', {
      globalSetup: '<rootDir>/test/browser/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/browser/support/global-teardown.ts',
    }),
    project('e2e', {
      globalSetup: '<rootDir>/test/e2e/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/e2e/support/global-teardown.ts',
    }),
  ],
};
