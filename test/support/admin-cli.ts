/**
 * The operator CLI (bin/admin.ts) for tests, two ways, with one answer shape:
 *
 * - `adminInProcess`: the CLI's `main` called in the test's own process, with the settings and output
 *   streams the test gives it. The commands, their checks and their store calls are the bin's own;
 *   only the Node process around them is the test's. Measured: a command as a subprocess costs 0.2 s
 *   (usage errors) to 0.4 s (store commands) of CPU loading the bundle and the AWS SDK; moving about
 *   80 of admin-cli.test.ts's 100 commands in process took the file from 88 s to 54 s of CPU.
 * - `adminSubprocess`: `node bin/run-admin.cjs`, exactly what `npm run admin` runs, for the few tests
 *   that prove the bin itself: its exit codes, its stdout and stderr, settings read from its
 *   environment (the cap on active keys, MAX_ACTIVE_KEYS, is read from the process's environment).
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { main } from '../../bin/admin';

const ROOT = resolve(__dirname, '../..');
/** `npm run admin` runs exactly this. */
const CLI = resolve(ROOT, 'bin/run-admin.cjs');

/** One command's outcome. */
export interface AdminRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed; the CLI prints exactly one JSON object ({} when stdout holds none). */
  json: Record<string, unknown>;
  /** stderr parsed when it is not empty. */
  error?: Record<string, unknown>;
}

function answer(code: number, stdout: string, stderr: string): AdminRun {
  return {
    code,
    stdout,
    stderr,
    json: stdout.trim().startsWith('{') ? JSON.parse(stdout) : {},
    ...(stderr.trim() ? { error: JSON.parse(stderr) } : {}),
  };
}

/** Runs one command through the CLI's `main` in this process, with `env` as its whole environment. */
export async function adminInProcess(args: string[], env: NodeJS.ProcessEnv): Promise<AdminRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, env, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return answer(code, stdout, stderr);
}

/** Runs one command as `npm run admin` does: a Node process of its own on the bundled CLI. */
export function adminSubprocess(args: string[], env: NodeJS.ProcessEnv): Promise<AdminRun> {
  return new Promise((resolveRun) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolveRun(answer(code, stdout, stderr));
    });
  });
}
