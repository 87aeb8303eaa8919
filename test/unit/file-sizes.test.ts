/**
 * Every TypeScript file of the infrastructure (lib/) and of the API contract (contract/) stays under
 * 400 lines, and every file of functions/ under 600: past that a file holds more than one idea, and the
 * fix is a split along its seams.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const REPO_ROOT = path.resolve(__dirname, '../..');
const MAX_LINES = 400;
const MAX_FUNCTION_LINES = 600;

/** The `.ts` files under `dir`, relative to the repository root, at any depth. */
function typeScriptFiles(dir: string): string[] {
  return fs
    .readdirSync(path.join(REPO_ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(dir, file))
    .sort();
}

/** Lines as an editor counts them: a final newline ends the last line, it does not start another. */
function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

describe('file sizes', () => {
  test('the line count is what wc -l says for a file with a final newline, and counts one without', () => {
    // Act
    const counts = [lineCount(''), lineCount('a\n'), lineCount('a\nb\n'), lineCount('a\nb')];

    // Assert
    expect(counts).toEqual([0, 1, 2, 2]);
  });

  test('lib/, contract/ and functions/ hold TypeScript files (the walk finds them, nested folders too)', () => {
    // Act
    const files = [...typeScriptFiles('lib'), ...typeScriptFiles('contract'), ...typeScriptFiles('functions')];

    // Assert
    expect(files).toContain(path.join('lib', 'config.ts'));
    expect(files).toContain(path.join('lib', 'constructs', 'service-api.ts'));
    expect(files).toContain(path.join('contract', 'openapi-document.ts'));
    expect(files).toContain(path.join('functions', 'store', 'webhooks.ts'));
  });

  test.each(['lib', 'contract'])(`every .ts file under %s/ has fewer than ${MAX_LINES} lines`, (dir) => {
    // Act
    const tooLong = typeScriptFiles(dir)
      .map((file) => ({ file, lines: lineCount(fs.readFileSync(path.join(REPO_ROOT, file), 'utf8')) }))
      .filter(({ lines }) => lines >= MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines (split it along its seams)`);

    // Assert
    expect(tooLong).toEqual([]);
  });

  test(`every .ts file under functions/ has fewer than ${MAX_FUNCTION_LINES} lines`, () => {
    // Act
    const tooLong = typeScriptFiles('functions')
      .map((file) => ({ file, lines: lineCount(fs.readFileSync(path.join(REPO_ROOT, file), 'utf8')) }))
      .filter(({ lines }) => lines >= MAX_FUNCTION_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines (split it along its seams)`);

    // Assert
    expect(tooLong).toEqual([]);
  });
});
