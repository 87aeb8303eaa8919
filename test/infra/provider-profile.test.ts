/**
 * The provider profile at synth: chosen by `providerProfile`, validated before anything is built, and
 * handed to the functions that call the provider.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build } from 'esbuild';
import { KIE_PROFILE, MOCK_PROFILE } from '../../functions/core/profiles';
import { BUNDLE_OPTIONS, providerProfileDefine } from '../../lib/bundle-options';
import { resolveProviderProfile } from '../../lib/config';
import { ROUTES } from '../../lib/routes';
import { cleanUp, logicalIdOf, type SynthesizedService, synthesize } from './support';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'generation-profiles-'));

/** Writes `profile` as a JSON file and returns its path. */
function profileFile(name: string, profile: unknown): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(profile, null, 2));
  return file;
}

/** The kie profile with image-model-2's tier key removed and video-d3's duration sent in an unknown format. */
function brokenProfile(): unknown {
  const copy = JSON.parse(JSON.stringify(KIE_PROFILE)) as {
    name: string;
    models: Record<string, { input: Record<string, unknown> }>;
  };
  copy.name = 'broken';
  delete copy.models['image-model-2']?.input.resolution;
  (copy.models['video-d3'] as { input: Record<string, unknown> }).input.duration = { key: 'duration', format: 'text' };
  return copy;
}

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a broken profile stops synth', () => {
  test('naming each model and field at fault', () => {
    // Prepare
    const file = profileFile('broken.json', brokenProfile());

    // Act
    const synth = () => synthesize({ providerProfile: file }, { bundle: false });

    // Assert
    expect(synth).toThrow(/^providerProfile: Provider profile "broken" is invalid:/);
    expect(synth).toThrow(/image-model-2: input\.resolution: required: image-model-2 is priced by tier \(1K, 2K, 4K\)/);
    expect(synth).toThrow(/video-d3: input\.duration\.format: must be "number" or "string"/);
  });

  test('an unknown profile name, listing the shipped ones', () => {
    // Act
    const synth = () => synthesize({ providerProfile: 'acme' }, { bundle: false });

    // Assert
    expect(synth).toThrow(/providerProfile: [\s\S]*no shipped profile is called "acme"; use one of mock, kie/);
  });

  test('a profile file that does not exist', () => {
    // Act
    const synth = () => synthesize({ providerProfile: path.join(dir, 'missing.json') }, { bundle: false });

    // Assert
    expect(synth).toThrow(/^providerProfile: cannot read .*missing\.json/);
  });
});

describe('a valid profile reaches the provider functions', () => {
  let service: SynthesizedService | undefined;

  afterAll(() => {
    cleanUp(service);
  });

  test('the shipped profile is named in PROVIDER_PROFILE of every function that calls the provider', () => {
    // Act
    service = synthesize({ providerProfile: 'mock' }, { bundle: false });

    // Assert
    for (const route of ROUTES.filter((r) => r.needs.provider)) {
      const fn = service.stack.functions.get(route.name);
      const id = fn ? logicalIdOf(service, fn) : '';
      expect(service.template.toJSON().Resources[id].Properties.Environment.Variables.PROVIDER_PROFILE).toBe('mock');
    }
  });

  test('a JSON profile is validated and handed over compact, to be fixed into the bundles', () => {
    // Prepare
    const custom = { ...JSON.parse(JSON.stringify(KIE_PROFILE)), name: 'my-upstream' };
    const file = profileFile('my-upstream.json', custom);

    // Act
    const resolved = resolveProviderProfile(file);

    // Assert
    expect(resolved.profile.name).toBe('my-upstream');
    expect(resolved.json).toBe(JSON.stringify(custom));
  });
});

describe('the bundles carry only the chosen profile', () => {
  /** The submit-image bundle built with the construct's options and this profile define. */
  async function submitBundle(define: Record<string, string>): Promise<string> {
    const result = await build({
      ...BUNDLE_OPTIONS,
      mainFields: [...BUNDLE_OPTIONS.mainFields],
      define: { ...BUNDLE_OPTIONS.define, ...define },
      entryPoints: [path.join(__dirname, '../../functions/submit-image/handler.ts')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      write: false,
    });
    return result.outputFiles[0]?.text ?? '';
  }

  test('kie drops the mock profile, mock drops kie, a JSON profile drops both and carries its own', async () => {
    // Prepare
    // The mock profile under other names: what it contains can only come from the JSON.
    const custom = JSON.parse(JSON.stringify(MOCK_PROFILE).replaceAll('provider/', 'acme/'));
    custom.name = 'acme';

    // Act
    const kie = await submitBundle(providerProfileDefine('kie'));
    const mock = await submitBundle(providerProfileDefine('mock'));
    const json = await submitBundle(providerProfileDefine('acme', JSON.stringify(custom)));

    // Assert
    // (Booleans, not toContain: a failure would print the whole bundle.)
    const has = (bundle: string, text: string) => bundle.includes(text);
    expect([has(kie, 'google/nano-banana-edit'), has(kie, 'provider/image-model-1-edit')]).toEqual([true, false]);
    expect([has(mock, 'provider/image-model-1-edit'), has(mock, 'google/nano-banana-edit')]).toEqual([true, false]);
    expect([
      has(json, 'acme/image-model-1-edit'),
      has(json, 'provider/image-model-1-edit'),
      has(json, 'google/nano-banana-edit'),
    ]).toEqual([true, false, false]);
  }, 120_000);
});
