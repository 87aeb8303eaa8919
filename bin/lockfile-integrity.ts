/**
 * Which package-lock.json entries carry no `integrity`, and why that is acceptable or not. One rule for
 * `npm run check:lock` (CI) and the unit test.
 *
 * Every entry npm downloads must carry its integrity (a SHA-512 of the tarball), so a tampered or
 * swapped package fails `npm ci`. Two kinds of entry cannot carry one, and only these are let through:
 * - `inBundle`: shipped inside its parent's tarball (aws-cdk-lib bundles its dependencies); the
 *   parent's integrity covers its bytes, and npm never records one for it.
 * - optional binaries for another platform (`os`/`cpu` not this one): Biome's CLI and unrs-resolver's
 *   bindings for macOS, Windows, musl and so on. The registry this project installs from serves none of
 *   them (404), so npm cannot learn their integrity, and it never installs them here;
 *   `npm run lockfile:complete` writes them so that `npm ci` accepts the lock (npm/cli#8320).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface LockEntry {
  integrity?: string;
  link?: boolean;
  inBundle?: boolean;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
}

export interface LockIntegrity {
  /** Entries npm installs from the registry (links and the root excluded). */
  packages: number;
  withIntegrity: number;
  /** Entries without integrity that are let through, with the reason. */
  excused: { path: string; reason: 'in-bundle' | 'other-platform' }[];
  /** Entries without integrity that should have one: a CI failure. */
  missing: string[];
}

/** The platform npm installs for: operating system, CPU and (on Linux) C library. */
export interface Platform {
  os: string;
  cpu: string;
  libc?: 'glibc' | 'musl';
}

/** This machine, as npm sees it (glibc when Node reports a glibc runtime, else musl on Linux). */
export function thisPlatform(): Platform {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  const header = report?.header;
  if (process.platform !== 'linux') return { os: process.platform, cpu: process.arch };
  return { os: process.platform, cpu: process.arch, libc: header?.glibcVersionRuntime ? 'glibc' : 'musl' };
}

function forPlatform(entry: LockEntry, platform: Platform): boolean {
  const matches = (list: string[] | undefined, value: string | undefined) =>
    list === undefined ||
    value === undefined ||
    list.some((item) => (item.startsWith('!') ? item.slice(1) !== value : item === value));
  return matches(entry.os, platform.os) && matches(entry.cpu, platform.cpu) && matches(entry.libc, platform.libc);
}

/** Reads the lock file and sorts its entries by the rule above. */
export function lockIntegrity(
  lockText: string = readFileSync(join(__dirname, '..', 'package-lock.json'), 'utf8'),
  platform: Platform = thisPlatform(),
): LockIntegrity {
  const lock = JSON.parse(lockText) as { packages?: Record<string, LockEntry> };
  const result: LockIntegrity = { packages: 0, withIntegrity: 0, excused: [], missing: [] };
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    if (path === '' || entry.link) continue;
    result.packages += 1;
    if (entry.integrity) result.withIntegrity += 1;
    else if (entry.inBundle) result.excused.push({ path, reason: 'in-bundle' });
    else if (entry.optional && !forPlatform(entry, platform)) result.excused.push({ path, reason: 'other-platform' });
    else result.missing.push(path);
  }
  return result;
}

if (require.main === module) {
  const result = lockIntegrity();
  const byReason = (reason: string) => result.excused.filter((entry) => entry.reason === reason).length;
  process.stdout.write(
    `${result.packages} lock entries: ${result.withIntegrity} with integrity, ${byReason('in-bundle')} inside their parent's tarball, ${byReason('other-platform')} optional binaries of other platforms\n`,
  );
  if (result.missing.length > 0) {
    process.stderr.write(`Lock entries without integrity:\n${result.missing.map((path) => `  ${path}`).join('\n')}\n`);
    process.exitCode = 1;
  }
}
