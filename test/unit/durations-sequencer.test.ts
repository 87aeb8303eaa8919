/**
 * The test sequencer (test/support/durations-sequencer.js): on a checkout jest has no cache for, the
 * files start in the order of test/support/file-durations.json, slowest first, and files it does not
 * know start before them.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const DurationsSequencer = require('../support/durations-sequencer.js') as new (
  options: unknown,
) => { sort(tests: FakeTest[]): FakeTest[] };
const RECORDED = JSON.parse(fs.readFileSync(path.join(ROOT, 'test/support/file-durations.json'), 'utf8')) as {
  files: Record<string, number>;
};

interface FakeTest {
  path: string;
  duration?: number;
  context: { config: Record<string, unknown>; hasteFS: { getSize(): number } };
}

/** Tests as jest hands them to a sequencer, with an empty cache directory (a fresh clone). */
function testsFor(files: string[], cacheDirectory: string): FakeTest[] {
  const context = {
    config: { rootDir: ROOT, cache: true, cacheDirectory, id: 'durations-sequencer-test', haste: {} },
    hasteFS: { getSize: () => 1 },
  };
  return files.map((file) => ({ path: path.join(ROOT, file), context }));
}

describe('the test sequencer without a jest cache', () => {
  let cacheDirectory: string;

  beforeAll(() => {
    cacheDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'sequencer-'));
  });

  afterAll(() => {
    fs.rmSync(cacheDirectory, { recursive: true, force: true });
  });

  test('starts the recorded files slowest first, and a file it has no record of before them', () => {
    // Prepare
    const recorded = Object.entries(RECORDED.files);
    const slowest = recorded.reduce((a, b) => (b[1] > a[1] ? b : a))[0];
    const fastest = recorded.reduce((a, b) => (b[1] < a[1] ? b : a))[0];
    const unknown = 'test/unit/no-such-file-yet.test.ts';

    // Act
    const order = new DurationsSequencer({})
      .sort(testsFor([fastest, unknown, slowest], cacheDirectory))
      .map((test) => path.relative(ROOT, test.path));

    // Assert
    expect(RECORDED.files[slowest]).toBeGreaterThan(RECORDED.files[fastest] ?? 0);
    expect(order).toEqual([unknown, slowest, fastest]);
  });
});
