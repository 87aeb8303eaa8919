/**
 * The route table points at real handlers: every entry exists and exports `handler`. esbuild reads
 * the exports without running the module (re-exports included).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { build } from 'esbuild';
import { AUTHORIZER, AUTHORIZER_IDENTITY_SOURCES, ROUTES, SWEEPER } from '../../lib/routes';
import { REPO_ROOT } from './support';

const definitions = [...ROUTES, AUTHORIZER, SWEEPER];

async function exportsOf(entry: string): Promise<string[]> {
  const result = await build({
    entryPoints: [path.join(REPO_ROOT, entry)],
    bundle: false,
    write: false,
    metafile: true,
    format: 'esm',
    platform: 'node',
    logLevel: 'silent',
  });
  return Object.values(result.metafile.outputs).flatMap((output) => output.exports);
}

test.each(definitions.map((definition) => [definition.name, definition.entry]))(
  '%s: %s exists and exports handler',
  async (_name, entry) => {
    // Act
    const exported = await exportsOf(entry);

    // Assert
    expect(fs.existsSync(path.join(REPO_ROOT, entry))).toBe(true);
    expect(exported).toContain('handler');
  },
);

test('names, entries and method/path pairs are unique, and names match their folders', () => {
  // Act
  const names = definitions.map((definition) => definition.name);
  const entries = definitions.map((definition) => definition.entry);
  const endpoints = ROUTES.map((route) => `${route.method} ${route.path}`);

  // Assert
  expect(new Set(names).size).toBe(names.length);
  expect(new Set(entries).size).toBe(entries.length);
  expect(new Set(endpoints).size).toBe(endpoints.length);
  for (const definition of definitions) expect(definition.entry).toBe(`functions/${definition.name}/handler.ts`);
});

test('the authorizer identity source is only the caller address (always present), so a cookie-only request reaches it', () => {
  // Assert
  expect([...AUTHORIZER_IDENTITY_SOURCES]).toEqual(['context.identity.sourceIp']);
});
