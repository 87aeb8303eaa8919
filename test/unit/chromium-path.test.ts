/**
 * The browser tests' Chromium lookup: a machine without Chromium must fail the run at once with the
 * way to get one, never skip the tests.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChromiumMissingError, chromiumPath } from '../browser/support/chromium';

describe('chromiumPath', () => {
  let dir: string;
  let fakeChromium: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'chromium-path-'));
    fakeChromium = join(dir, 'chromium');
    writeFileSync(fakeChromium, '#!/bin/sh\n');
    chmodSync(fakeChromium, 0o755);
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('with no CHROMIUM_PATH and no Debian package, it fails saying how to install one or which variable to set', () => {
    // Act
    const find = () => chromiumPath({}, [join(dir, 'missing-chromium')]);

    // Assert
    expect(find).toThrow(ChromiumMissingError);
    expect(find).toThrow(/apt-get install -y chromium/);
    expect(find).toThrow(/CHROMIUM_PATH/);
  });

  test('a CHROMIUM_PATH that is not an executable is refused with its value, not replaced by another browser', () => {
    // Prepare
    const notExecutable = join(dir, 'not-executable');
    writeFileSync(notExecutable, '');

    // Act
    const find = () => chromiumPath({ CHROMIUM_PATH: notExecutable }, [fakeChromium]);

    // Assert
    expect(find).toThrow(`CHROMIUM_PATH=${notExecutable} is not an executable file`);
  });

  test('CHROMIUM_PATH wins over the Debian package; without it the first installed candidate is used', () => {
    // Act
    const configured = chromiumPath({ CHROMIUM_PATH: fakeChromium }, ['/nonexistent']);
    const found = chromiumPath({}, [join(dir, 'missing-chromium'), fakeChromium]);

    // Assert
    expect(configured).toBe(fakeChromium);
    expect(found).toBe(fakeChromium);
  });
});
