/**
 * `npm run lockfile:complete`: adds the platform packages npm 11 leaves out of package-lock.json.
 *
 * npm (11.19 here) leaves other platforms' optional binaries out of the lock file when it cannot read
 * their metadata (the registry this project installs from does not carry Biome's CLI or unrs-resolver's
 * bindings for other platforms), and then `npm ci` refuses the very lock file it wrote ("Missing:
 * @biomejs/cli-darwin-arm64@ from lock file"; npm/cli#8320, #9083). This adds every missing entry: from
 * the registry's metadata when it has it, else from the package name (`<os>-<cpu>[-<libc>]`), without
 * a `resolved` URL (as the rest of the lock). npm skips them on any other platform, so nothing is
 * fetched. Run it after any `npm install` that changes dependencies.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface LockPackage {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  optionalDependencies?: Record<string, string>;
  [field: string]: unknown;
}

const LIBC: Record<string, string> = { gnu: 'glibc', musl: 'musl' };

/** The registry's own description of a platform package, when the registry has it. */
function registryEntry(name: string, spec: string): LockPackage | undefined {
  try {
    const meta = JSON.parse(
      execFileSync('npm', ['view', `${name}@${spec}`, 'version', 'dist.integrity', 'cpu', 'os', 'libc', '--json'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    ) as { version: string; 'dist.integrity': string; cpu?: string[]; os?: string[]; libc?: string[] };
    return {
      version: meta.version,
      integrity: meta['dist.integrity'],
      optional: true,
      ...(meta.cpu ? { cpu: meta.cpu } : {}),
      ...(meta.os ? { os: meta.os } : {}),
      ...(meta.libc ? { libc: meta.libc } : {}),
    };
  } catch {
    return undefined;
  }
}

/** `@scope/cli-linux-arm64-musl` -> os linux, cpu arm64, libc musl (platform packages name themselves so). */
function entryFromName(name: string, spec: string): LockPackage {
  const tokens = (name.split('/').pop() ?? name).split('-');
  const osIndex = tokens.findIndex((token) =>
    ['android', 'darwin', 'freebsd', 'linux', 'openharmony', 'win32', 'netbsd', 'openbsd', 'sunos', 'aix'].includes(
      token,
    ),
  );
  const os = tokens[osIndex];
  const cpu = tokens[osIndex + 1];
  if (!os || !cpu) throw new Error(`Cannot tell the platform of ${name}: add its lock entry by hand`);
  const libc = LIBC[(tokens[osIndex + 2] ?? '').replace(/eabihf$/, '')];
  return { version: spec, optional: true, cpu: [cpu], os: [os], ...(os === 'linux' && libc ? { libc: [libc] } : {}) };
}

const file = join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(readFileSync(file, 'utf8')) as { packages: Record<string, LockPackage> };
const packages = lock.packages;
let added = 0;

for (const [path, entry] of Object.entries(packages)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (packages[key] || packages[`${path}/${key}`]) continue;
    packages[key] = {
      ...(registryEntry(name, spec) ?? entryFromName(name, spec)),
      ...(entry.dev ? { dev: true } : {}),
    };
    added++;
  }
}

const sorted = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(file, `${JSON.stringify({ ...lock, packages: sorted }, null, 2)}\n`);
process.stdout.write(`package-lock.json: ${added} missing platform package(s) added\n`);
