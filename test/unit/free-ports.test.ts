import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, highestNonEphemeralPort } from '../../local/free-ports';

describe('free ports for a process that starts next', () => {
  it('are distinct, bindable, and below the ephemeral range that outgoing connections draw from', async () => {
    // Prepare
    const highest = highestNonEphemeralPort();

    // Act
    const ports = await freePorts(8);

    // Assert
    expect(new Set(ports).size).toBe(8);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThanOrEqual(highest);
      const server = createServer();
      await new Promise<void>((ready, fail) => {
        server.once('error', fail);
        server.listen(port, '127.0.0.1', () => ready());
      });
      await new Promise<void>((closed) => server.close(() => closed()));
    }
  });

  it('stays below where Linux says its ephemeral range starts, and below 32768 elsewhere', () => {
    // Prepare
    const folder = mkdtempSync(join(tmpdir(), 'port-range-'));
    const narrowed = join(folder, 'narrowed');
    writeFileSync(narrowed, '20000\t60999\n');
    const usual = join(folder, 'usual');
    writeFileSync(usual, '32768\t60999\n');

    // Act
    const belowNarrowed = highestNonEphemeralPort(narrowed);
    const belowUsual = highestNonEphemeralPort(usual);
    const withoutFile = highestNonEphemeralPort(join(folder, 'absent'));

    // Assert
    expect(belowNarrowed).toBe(19_999);
    expect(belowUsual).toBe(32_767);
    expect(withoutFile).toBe(32_767);
  });
});
