/**
 * Where the browser tests find Chromium: `CHROMIUM_PATH`, else Debian's `chromium` package. Nothing
 * is ever downloaded; without a browser the run stops at once and says how to get one.
 */
import { accessSync, constants } from 'node:fs';

/** Debian's package (`apt-get install -y chromium`) and the older Ubuntu name. */
export const CHROMIUM_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The message of a run without a usable browser. */
export class ChromiumMissingError extends Error {
  constructor(detail: string) {
    super(
      `The browser tests need Chromium (${detail}). Install Debian's package with ` +
        '`sudo apt-get install -y chromium`, or set CHROMIUM_PATH to a Chromium or Chrome executable.',
    );
    this.name = 'ChromiumMissingError';
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The Chromium executable to drive, or a `ChromiumMissingError`. */
export function chromiumPath(
  env: NodeJS.ProcessEnv = process.env,
  candidates: readonly string[] = CHROMIUM_CANDIDATES,
): string {
  const configured = env.CHROMIUM_PATH;
  if (configured) {
    if (executable(configured)) return configured;
    throw new ChromiumMissingError(`CHROMIUM_PATH=${configured} is not an executable file`);
  }
  const found = candidates.find(executable);
  if (found) return found;
  throw new ChromiumMissingError(`none of ${candidates.join(', ')} exists and CHROMIUM_PATH is not set`);
}
