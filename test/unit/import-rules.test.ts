/**
 * The layering of functions/ (docs/design/architecture.md) is enforced by Biome (biome.json: `noImportCycles`, and
 * `noRestrictedImports` per layer), and so is the place of contract/ (the OpenAPI document): it reads
 * functions/core and the route table, and neither functions/ nor lib/ imports it. These tests run the project's own Biome with the project's own
 * configuration on tiny fixture trees, so a configuration edit that quietly stops the rules from biting
 * fails here. The fixtures live in a temporary directory: inside the repository they would fail
 * `npm run lint` by design.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const REPO_ROOT = path.resolve(__dirname, '../..');
const BIOME = path.join(REPO_ROOT, 'node_modules/.bin/biome');

interface LintResult {
  status: number | null;
  output: string;
}

/** Lints `files` (path to source) laid out as a copy of functions/, with the repository's biome.json. */
function lintFixture(files: Record<string, string>): LintResult {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'import-rules-'));
  try {
    const config = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'biome.json'), 'utf8')) as Record<string, unknown>;
    // The fixture is no git work tree and has no node_modules for the schema: neither matters to the rules.
    delete config.$schema;
    config.vcs = { enabled: false };
    fs.writeFileSync(path.join(dir, 'biome.json'), JSON.stringify(config));
    for (const [file, source] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), source);
    }
    const result = spawnSync(BIOME, ['lint', '--max-diagnostics=50', '.'], { cwd: dir, encoding: 'utf8' });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('import rules (biome.json)', () => {
  test('a layered tree without cycles passes', () => {
    // Prepare
    const files = {
      'functions/core/a.ts': "import { b } from './b';\nexport const a = [b];\n",
      'functions/core/b.ts': 'export const b = 1;\n',
      'functions/store/s.ts': "import { a } from '../core/a';\nexport const s = [a];\n",
      'functions/get-task/handler.ts': "import { s } from '../store/s';\nexport const h = [s];\n",
    };

    // Act
    const result = lintFixture(files);

    // Assert
    expect(result.output).not.toMatch(/noImportCycles|noRestrictedImports/);
    expect(result.status).toBe(0);
  });

  test('an import cycle fails, also through a type-only import', () => {
    // Prepare
    const files = {
      'functions/core/a.ts': "import { b } from './b';\nexport const a = [b];\nexport type A = number;\n",
      'functions/core/b.ts': "import type { A } from './a';\nexport const b: A = 1;\n",
    };

    // Act
    const result = lintFixture(files);

    // Assert
    expect(result.status).not.toBe(0);
    expect(result.output).toContain('lint/suspicious/noImportCycles');
    expect(result.output).toContain('core/b.ts');
  });

  test('an import against the layers fails: upward, entry to entry, into lib/ or local/ (also from a new folder)', () => {
    // Prepare
    const files = {
      'functions/http/h.ts': 'export const h = 1;\n',
      'functions/store/up.ts': "import { h } from '../http/h';\nexport const s = [h];\n",
      'functions/store/table.ts': 'export const t = 1;\n',
      'functions/core/profiles/up.ts': "import { t } from '../../store/table';\nexport const p = [t];\n",
      'functions/media/stack.ts': "import type { X } from '../../lib/routes';\nexport type M = X;\n",
      'lib/routes.ts': 'export type X = number;\n',
      'functions/sweeper/handler.ts': 'export const handler = 1;\n',
      'functions/get-task/handler.ts':
        "import { handler as h } from '../sweeper/handler';\nexport const handler = h;\n",
      'functions/new-folder/x.ts': "import { s } from '../../local/stack';\nexport const x = [s];\n",
      'local/stack.ts': 'export const s = 1;\n',
    };

    // Act
    const result = lintFixture(files);

    // Assert
    expect(result.status).not.toBe(0);
    const restricted = result.output.match(/lint\/style\/noRestrictedImports/g) ?? [];
    expect(restricted).toHaveLength(5);
    expect(result.output).toContain('store/up.ts');
    expect(result.output).toContain('profiles/up.ts');
    expect(result.output).toContain('media/stack.ts');
    expect(result.output).toContain('get-task/handler.ts');
    expect(result.output).toContain('new-folder/x.ts');
  });

  test('the money layer sits between lifecycle and store, and every entry folder is held to the entry rule by pattern', () => {
    // Prepare
    const files = {
      'functions/store/table.ts': 'export const t = 1;\n',
      'functions/money/accept.ts': "import { t } from '../store/table';\nexport const m = [t];\n",
      'functions/lifecycle/submit.ts': "import { m } from '../money/accept';\nexport const l = [m];\n",
      'functions/get-usage/handler.ts': "import { m } from '../money/accept';\nexport const handler = m;\n",
      'functions/store/up-money.ts': "import { m } from '../money/accept';\nexport const s = [m];\n",
      'functions/money/up.ts': "import { l } from '../lifecycle/submit';\nexport const u = [l];\n",
      'functions/cancel-task/handler.ts':
        "import { handler as h } from '../get-usage/handler';\nexport const handler = h;\n",
      'functions/delete-upload/handler.ts':
        "import { handler as h } from '../cancel-task/handler';\nexport const handler = h;\n",
    };

    // Act
    const result = lintFixture(files);

    // Assert
    expect(result.status).not.toBe(0);
    const restricted = result.output.match(/lint\/style\/noRestrictedImports/g) ?? [];
    expect(restricted).toHaveLength(4);
    for (const file of ['store/up-money.ts', 'money/up.ts', 'cancel-task/handler.ts', 'delete-upload/handler.ts']) {
      expect(result.output).toContain(file);
    }
    expect(result.output).not.toContain('get-usage/handler.ts');
    expect(result.output).not.toContain('lifecycle/submit.ts');
  });

  test('contract/ may read functions/core, the route table and package.json', () => {
    // Prepare
    const files = {
      'functions/core/validation.ts': 'export const v = 1;\n',
      'lib/routes.ts': 'export const ROUTES = [];\n',
      'package.json': '{ "version": "0.0.0" }\n',
      'contract/openapi-json.ts': 'export const j = 1;\n',
      'contract/openapi-document.ts':
        "import { v } from '../functions/core/validation';\nimport { ROUTES } from '../lib/routes';\nimport packageJson from '../package.json';\nimport { j } from './openapi-json';\nexport const d = [v, ROUTES, packageJson, j];\n",
    };

    // Act
    const result = lintFixture(files);

    // Assert
    expect(result.output).not.toMatch(/noRestrictedImports/);
    expect(result.status).toBe(0);
  });

  test('contract/ reads nothing else of ours, and neither functions/ nor lib/ imports contract/', () => {
    // Prepare
    const files = {
      'functions/store/table.ts': 'export const t = 1;\n',
      'lib/config.ts': 'export const c = 1;\n',
      'contract/openapi-json.ts': 'export const j = 1;\n',
      'contract/store.ts': "import { t } from '../functions/store/table';\nexport const s = [t];\n",
      'contract/config.ts': "import { c } from '../lib/config';\nexport const k = [c];\n",
      'functions/openapi/handler.ts': "import { j } from '../../contract/openapi-json';\nexport const handler = j;\n",
      'functions/core/document.ts': "import { j } from '../../contract/openapi-json';\nexport const x = j;\n",
      'lib/constructs/api.ts': "import { j } from '../../contract/openapi-json';\nexport const a = j;\n",
      'lib/stack.ts': "import { j } from '../contract/openapi-json';\nexport const b = j;\n",
    };

    // Act
    const result = lintFixture(files);

    // Assert
    expect(result.status).not.toBe(0);
    const restricted = result.output.match(/lint\/style\/noRestrictedImports/g) ?? [];
    expect(restricted).toHaveLength(6);
    for (const file of [
      'contract/store.ts',
      'contract/config.ts',
      'openapi/handler.ts',
      'core/document.ts',
      'constructs/api.ts',
      'lib/stack.ts',
    ]) {
      expect(result.output).toContain(file);
    }
  });
});
