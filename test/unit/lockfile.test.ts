import { lockIntegrity } from '../../bin/lockfile-integrity';

function lockWith(packages: Record<string, unknown>): string {
  return JSON.stringify({ lockfileVersion: 3, packages: { '': { name: 'x' }, ...packages } });
}

describe('package-lock.json integrity', () => {
  test('every entry npm downloads carries its integrity; only in-bundle entries go without', () => {
    // Act
    const result = lockIntegrity();

    // Assert
    expect(result.missing).toEqual([]);
    expect(result.unlisted).toEqual([]);
    expect(result.withIntegrity + result.inBundle.length).toBe(result.packages);
    expect(result.withIntegrity).toBeGreaterThan(500);
  });

  test('an optional binary of another platform without integrity fails; an in-bundle entry passes', () => {
    // Prepare
    const lock = lockWith({
      'node_modules/signed': { version: '1.0.0', integrity: 'sha512-abc' },
      'node_modules/unsigned': { version: '1.0.0' },
      'node_modules/parent': { version: '1.0.0', integrity: 'sha512-def' },
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
        integrity: 'sha512-ghi',
        optional: true,
        os: ['linux'],
        cpu: ['x64'],
        libc: ['glibc'],
      },
      'node_modules/local-link': { link: true, resolved: 'packages/x' },
    });

    // Act
    const result = lockIntegrity(lock);

    // Assert
    expect(result.packages).toBe(7);
    expect(result.withIntegrity).toBe(3);
    expect(result.inBundle).toEqual(['node_modules/parent/node_modules/bundled']);
    expect(result.missing).toEqual([
      'node_modules/unsigned',
      'node_modules/@x/cli-darwin-arm64',
      'node_modules/@x/cli-linux-x64-musl',
    ]);
  });

  test('a dependency the lock leaves out fails, wherever Node would look for it', () => {
    // Prepare: the CLI asks for two platform binaries; npm wrote only one (the registry lacked the other).
    const lock = lockWith({
      'node_modules/cli': {
        version: '1.0.0',
        integrity: 'sha512-a',
        dependencies: { hoisted: '^1.0.0', nested: '^1.0.0' },
        optionalDependencies: { '@x/cli-linux-x64': '1.0.0', '@x/cli-darwin-arm64': '1.0.0' },
      },
      'node_modules/cli/node_modules/nested': { version: '1.0.0', integrity: 'sha512-b' },
      'node_modules/hoisted': { version: '1.0.0', integrity: 'sha512-c' },
      'node_modules/@x/cli-linux-x64': { version: '1.0.0', integrity: 'sha512-d', optional: true },
    });

    // Act
    const result = lockIntegrity(lock);

    // Assert
    expect(result.missing).toEqual([]);
    expect(result.unlisted).toEqual(['node_modules/cli -> @x/cli-darwin-arm64']);
  });
});
