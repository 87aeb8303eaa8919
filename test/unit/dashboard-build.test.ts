/**
 * `npm start` builds the dashboard only when its sources changed since the last build
 * (`buildDashboardWhenStale`), into a scratch folder here.
 */
import { mkdtempSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDashboardWhenStale } from '../../dashboard/build';

describe('the dashboard build at start', () => {
  let outDir: string;

  beforeEach(() => {
    outDir = mkdtempSync(join(tmpdir(), 'dashboard-build-'));
  });

  afterEach(() => {
    rmSync(outDir, { recursive: true, force: true });
  });

  it('builds every file into an empty folder', () => {
    // Act
    buildDashboardWhenStale(outDir);

    // Assert
    expect(readdirSync(outDir).sort()).toEqual(['app.css', 'app.js', 'favicon.svg', 'index.html']);
  });

  it('leaves a build newer than every source alone', () => {
    // Prepare: a build stamped in the future, so no source can be newer.
    buildDashboardWhenStale(outDir);
    const future = new Date(Date.now() + 3_600_000);
    for (const name of readdirSync(outDir)) utimesSync(join(outDir, name), future, future);

    // Act
    buildDashboardWhenStale(outDir);

    // Assert
    expect(statSync(join(outDir, 'app.js')).mtimeMs).toBe(future.getTime());
  });

  it('builds again when a source is newer than the build', () => {
    // Prepare: a build stamped long ago, older than every source.
    buildDashboardWhenStale(outDir);
    const past = new Date(0);
    for (const name of readdirSync(outDir)) utimesSync(join(outDir, name), past, past);

    // Act
    buildDashboardWhenStale(outDir);

    // Assert
    expect(statSync(join(outDir, 'app.js')).mtimeMs).toBeGreaterThan(past.getTime());
    expect(statSync(join(outDir, 'index.html')).mtimeMs).toBeGreaterThan(past.getTime());
  });
});
