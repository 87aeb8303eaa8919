/**
 * Slots that every jest run on this machine shares: a test file holds one while it runs, and waits for
 * one when all are taken. Two copies of the suite side by side (two checkouts, CI jobs on one host)
 * then run at most as many files at once as one copy alone does, instead of twice as many.
 *
 * Why: the suite is CPU-bound (about 1.9 of 2 cores busy alone). Beside a second copy, eight files and
 * ten DynamoDB Local JVMs on two cores did not just share the cores: requests took seconds, the product's
 * client timed them out and sent them again (DynamoDB Local still does the work of the one it gave up
 * on), racing files held items longer and retried more, and a third of the files were done after 31
 * minutes. With the slots, each file runs as it does alone, and the two copies take turns.
 *
 * A slot is a directory `slot-<n>` holding its owner's pid (`mkdir` is atomic: one process gets it). A
 * slot whose owner is gone (a killed worker, a run stopped with Ctrl-C) is taken over. Two processes
 * that find the same abandoned slot can, rarely, both take it: one file more runs for a while, which
 * is harmless.
 *
 * Plain CommonJS: jest loads a test environment before any transform is set up for it.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** Where the slots live unless `TEST_MACHINE_SLOTS_DIR` says otherwise (one place per machine and user). */
const DEFAULT_DIR = path.join(os.tmpdir(), `generation-service-test-slots-${os.userInfo().uid}`);
/** A slot without its pid file yet is being taken, unless it is this old (its taker died in between). */
const UNCLAIMED_MS = 10_000;
const POLL_MS = 250;

/** The suite's jest workers (`maxWorkers` in jest.config.js reads it from here). */
const SUITE_WORKERS = 4;

/**
 * How many files may run at once on this machine: `TEST_MACHINE_SLOTS`, else two per core and never
 * fewer than the suite's workers (4 on two cores), so one copy alone never waits.
 */
function slotCount(env = process.env) {
  const configured = Number(env.TEST_MACHINE_SLOTS);
  if (Number.isInteger(configured) && configured > 0) return configured;
  return Math.max(SUITE_WORKERS, 2 * os.availableParallelism());
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return error.code === 'EPERM';
  }
}

function abandoned(slot) {
  try {
    const pid = Number(fs.readFileSync(path.join(slot, 'pid'), 'utf8'));
    return Number.isInteger(pid) && pid > 0 && !isAlive(pid);
  } catch {
    try {
      return Date.now() - fs.statSync(slot).mtimeMs > UNCLAIMED_MS;
    } catch {
      return false;
    }
  }
}

function tryTake(slot) {
  try {
    fs.mkdirSync(slot);
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
    if (abandoned(slot)) fs.rmSync(slot, { recursive: true, force: true });
    return false;
  }
  fs.writeFileSync(path.join(slot, 'pid'), String(process.pid));
  return true;
}

/**
 * Waits for a free slot and takes it; `release()` gives it back (safe to call twice).
 * @param {{ dir?: string, slots?: number, pollMs?: number }} [options]
 * @returns {Promise<{ slot: string, release(): void }>}
 */
async function acquireMachineSlot(options = {}) {
  const dir = options.dir ?? process.env.TEST_MACHINE_SLOTS_DIR ?? DEFAULT_DIR;
  const slots = options.slots ?? slotCount();
  fs.mkdirSync(dir, { recursive: true });
  // Start at a slot of this process's own: files that end at once then do not all race for slot 0.
  const first = process.pid % slots;
  for (;;) {
    for (let i = 0; i < slots; i++) {
      const slot = path.join(dir, `slot-${(first + i) % slots}`);
      if (tryTake(slot)) {
        let held = true;
        return {
          slot,
          release() {
            if (!held) return;
            held = false;
            fs.rmSync(slot, { recursive: true, force: true });
          },
        };
      }
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? POLL_MS));
  }
}

module.exports = { acquireMachineSlot, slotCount, SUITE_WORKERS };
