/**
 * The machine's test slots (test/support/machine-slots.js): copies of the suite side by side run at
 * most as many files at once as one copy alone, and a slot left by a killed process is taken over.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const { acquireMachineSlot, slotCount } = require('../support/machine-slots') as {
  acquireMachineSlot(options?: { dir?: string; slots?: number; pollMs?: number }): Promise<{
    slot: string;
    release(): void;
  }>;
  slotCount(env?: NodeJS.ProcessEnv): number;
};
const jestConfig = require('../../jest.config.js') as { maxWorkers: number };

let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'machine-slots-'));
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

test('two slots: a third taker waits until one is given back, then takes it', async () => {
  // Prepare
  const first = await acquireMachineSlot({ dir, slots: 2, pollMs: 10 });
  const second = await acquireMachineSlot({ dir, slots: 2, pollMs: 10 });
  let third: { slot: string } | undefined;
  const waiting = acquireMachineSlot({ dir, slots: 2, pollMs: 10 }).then((taken) => {
    third = taken;
    return taken;
  });
  // A taker tries every slot once before its first wait: that round found both held.
  await new Promise((resolve) => setImmediate(resolve));
  const heldBefore = third;
  const slotsBefore = fs.readdirSync(dir).sort();

  // Act
  first.release();
  const taken = await waiting;

  // Assert
  expect(heldBefore).toBeUndefined();
  expect(slotsBefore).toEqual(['slot-0', 'slot-1']);
  expect(new Set([first.slot, second.slot]).size).toBe(2);
  expect(taken.slot).toBe(first.slot);
  expect(fs.readFileSync(path.join(taken.slot, 'pid'), 'utf8')).toBe(String(process.pid));
});

test('a slot whose owner was killed is taken over; a release is safe to repeat', async () => {
  // Prepare: a child process takes the only slot and is killed without giving it back.
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require(${JSON.stringify(require.resolve('../support/machine-slots'))})` +
        `.acquireMachineSlot({ dir: ${JSON.stringify(dir)}, slots: 1 }).then(() => { console.log('held'); setInterval(() => {}, 1000); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve) => child.stdout?.on('data', () => resolve()));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  const ownerBefore = fs.readFileSync(path.join(dir, 'slot-0', 'pid'), 'utf8');

  // Act
  const taken = await acquireMachineSlot({ dir, slots: 1, pollMs: 10 });
  taken.release();
  taken.release();

  // Assert
  expect(ownerBefore).toBe(String(child.pid));
  expect(taken.slot).toBe(path.join(dir, 'slot-0'));
  expect(fs.existsSync(taken.slot)).toBe(false);
});

test("the count: TEST_MACHINE_SLOTS when it is a positive integer, else two per core and at least the suite's workers", () => {
  // Act
  const configured = slotCount({ TEST_MACHINE_SLOTS: '3' });
  const nonsense = slotCount({ TEST_MACHINE_SLOTS: 'lots' });
  const unset = slotCount({});

  // Assert: a run alone (jest's maxWorkers files at once) never waits for a slot
  expect(configured).toBe(3);
  expect(nonsense).toBe(Math.max(jestConfig.maxWorkers, 2 * os.availableParallelism()));
  expect(unset).toBe(nonsense);
  expect(unset).toBeGreaterThanOrEqual(jestConfig.maxWorkers);
});
