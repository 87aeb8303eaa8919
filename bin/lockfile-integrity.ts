/**
 * Whether package-lock.json pins every package npm downloads with its `integrity`. One rule for
 * `npm run check:lock` (CI) and the unit test.
 *
 * Every entry npm downloads must carry its integrity (a SHA-512 of the tarball), so a tampered or
 * swapped package fails `npm ci`. That holds for every platform, not only the one running the check: a
 * lock that is complete only for Linux would let a macOS or Windows install take unverified bytes.
 * Only one kind of entry is let through:
 * - `inBundle`: shipped inside its parent's tarball (aws-cdk-lib bundles its dependencies); the
 *   parent's integrity covers its bytes, and npm never records one for it.
 *
 * A dependency with no lock entry at all fails too: npm leaves out an optional binary whose metadata the
 * registry does not serve, and `npm ci` then refuses the lock it wrote (npm/cli#8320).
 *
 * Packages whose platform binaries the registry lacks (so npm could record no integrity for them) are
 * pinned to releases whose every binary it has (`@biomejs/biome`, and `unrs-resolver` in `overrides`);
 * docs/development/testing.md#the-lock-file-and-integrity says why and how to move those pins.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface LockEntry {
  integrity?: string;
  link?: boolean;
  inBundle?: boolean;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

export interface LockIntegrity {
  /** Entries npm installs from the registry (links and the root excluded). */
  packages: number;
  withIntegrity: number;
  /** Entries inside their parent's tarball: no integrity of their own, covered by the parent's. */
  inBundle: string[];
  /** Entries without integrity that should have one: a CI failure. */
  missing: string[];
  /** Dependencies (`<entry> -> <name>`) with no lock entry npm could install them from: a CI failure. */
  unlisted: string[];
}

/** Whether `name`, asked for by the entry at `from`, has a lock entry, looked up as Node resolves it. */
function listed(packages: Record<string, LockEntry>, from: string, name: string): boolean {
  let base = from;
  for (;;) {
    if (packages[base ? `${base}/node_modules/${name}` : `node_modules/${name}`]) return true;
    if (!base) return false;
    const parent = base.lastIndexOf('/node_modules/');
    base = parent < 0 ? '' : base.slice(0, parent);
  }
}

/** Reads the lock file and sorts its entries by the rule above. */
export function lockIntegrity(
  lockText: string = readFileSync(join(__dirname, '..', 'package-lock.json'), 'utf8'),
): LockIntegrity {
  const lock = JSON.parse(lockText) as { packages?: Record<string, LockEntry> };
  const packages = lock.packages ?? {};
  const result: LockIntegrity = { packages: 0, withIntegrity: 0, inBundle: [], missing: [], unlisted: [] };
  for (const [path, entry] of Object.entries(packages)) {
    // Only the root's devDependencies are installed; a dependency's own are not in the lock.
    const wanted = {
      ...entry.dependencies,
      ...entry.optionalDependencies,
      ...(path === '' ? entry.devDependencies : {}),
    };
    for (const name of Object.keys(wanted)) {
      if (!listed(packages, path, name)) result.unlisted.push(`${path || '(root)'} -> ${name}`);
    }
    if (path === '' || entry.link) continue;
    result.packages += 1;
    if (entry.integrity) result.withIntegrity += 1;
    else if (entry.inBundle) result.inBundle.push(path);
    else result.missing.push(path);
  }
  return result;
}

if (require.main === module) {
  const result = lockIntegrity();
  process.stdout.write(
    `${result.packages} lock entries: ${result.withIntegrity} with integrity, ${result.inBundle.length} inside their parent's tarball\n`,
  );
  if (result.missing.length > 0) {
    process.stderr.write(`Lock entries without integrity:\n${result.missing.map((path) => `  ${path}`).join('\n')}\n`);
    process.exitCode = 1;
  }
  if (result.unlisted.length > 0) {
    process.stderr.write(
      `Dependencies missing from the lock:\n${result.unlisted.map((line) => `  ${line}`).join('\n')}\n`,
    );
    process.exitCode = 1;
  }
}
