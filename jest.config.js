// One config style for every project: ts-jest transpiles TypeScript (type-checking is `npm run build`)
// and the ESM-only @middy packages, which jest cannot require as they are shipped.
/** @type {import('ts-jest').TsJestTransformerOptions} */
const tsJest = {
  tsconfig: { module: 'commonjs', moduleResolution: 'node10', allowJs: true, isolatedModules: true },
  diagnostics: false,
};

/** @param {string} name @param {Partial<import('jest').Config>} extra @returns {import('jest').Config} */
const project = (name, extra = {}) => ({
  displayName: name,
  testEnvironment: 'node',
  roots: [`<rootDir>/test/${name}`],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.[jt]s$': ['ts-jest', tsJest] },
  transformIgnorePatterns: ['/node_modules/(?!@middy/)'],
  ...extra,
});

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    project('unit'),
    // Real engines on a 2-core machine: generous per-test limits; speed is measured in bench/, not here.
    project('integration', {
      testTimeout: 60_000,
      globalSetup: '<rootDir>/test/support/dynamodb-global-setup.ts',
      globalTeardown: '<rootDir>/test/support/dynamodb-global-teardown.ts',
    }),
    project('infra', { testTimeout: 180_000 }),
    project('e2e', {
      testTimeout: 60_000,
      globalSetup: '<rootDir>/test/e2e/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/e2e/support/global-teardown.ts',
    }),
  ],
};
