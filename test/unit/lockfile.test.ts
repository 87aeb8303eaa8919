import { lockIntegrity } from '../../bin/lockfile-integrity';

const LINUX = { os: 'linux', cpu: 'x64', libc: 'glibc' } as const;

function lockWith(packages: Record<string, unknown>): string {
  return JSON.stringify({ lockfileVersion: 3, packages: { '': { name: 'x' }, ...packages } });
}

describe('package-lock.json integrity', () => {
  test('every entry npm installs here carries its integrity', () => {
    // Act
    const result = lockIntegrity(undefined, LINUX);

    // Assert
    expect(result.missing).toEqual([]);
    expect(result.withIntegrity + result.excused.length).toBe(result.packages);
    expect(result.withIntegrity).toBeGreaterThan(500);
  });

  test('only bundled entries and other platforms’ optional binaries may go without, nothing else', () => {
    // Prepare
    const lock = lockWith({
      'node_modules/signed': { version: '1.0.0', integrity: 'sha512-abc' },
      'node_modules/unsigned': { version: '1.0.0' },
      'node_modules/parent/node_modules/bundled': { version: '1.0.0', inBundle: true },
      'node_modules/@x/cli-darwin-arm64': { version: '1.0.0', optional: true, os: ['darwin'], cpu: ['arm64'] },
      'node_modules/@x/cli-linux-x64-musl': {
        version: '1.0.0',
        optional: true,
        os: ['linux'],
        cpu: ['x64'],
        libc: ['musl'],
      },
      'node_modules/@x/cli-linux-x64': {
        version: '1.0.0',
        optional: true,
        os: ['linux'],
        cpu: ['x64'],
        libc: ['glibc'],
      },
      'node_modules/local-link': { link: true, resolved: 'packages/x' },
    });

    // Act
    const result = lockIntegrity(lock, LINUX);

    // Assert
    expect(result.packages).toBe(6);
    expect(result.missing).toEqual(['node_modules/unsigned', 'node_modules/@x/cli-linux-x64']);
    expect(result.excused).toEqual([
      { path: 'node_modules/parent/node_modules/bundled', reason: 'in-bundle' },
      { path: 'node_modules/@x/cli-darwin-arm64', reason: 'other-platform' },
      { path: 'node_modules/@x/cli-linux-x64-musl', reason: 'other-platform' },
    ]);
  });
});
