/**
 * More than one upstream, deployed (lib/constructs/upstreams.ts): `-c upstreams=<json or file>` checked
 * at synth with messages naming the upstream and the field; each upstream its own secret, the list given
 * to every function that calls the provider, an alarm per upstream; without the key nothing changes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Match } from 'aws-cdk-lib/assertions';
import { LAMBDAS } from '../../lib/routes';
import { cleanUp, functionLogicalId, type SynthesizedService, synthesize } from './support';

const TWO = JSON.stringify([
  { name: 'kie-a', profile: 'kie', baseUrl: 'https://api.kie.ai', createRateLimit: '20/10' },
  { name: 'kie-b', profile: 'kie', baseUrl: 'https://api.kie.ai', createRateLimit: '20/10', models: ['image-model-1'] },
]);

const services: SynthesizedService[] = [];
afterEach(() => {
  for (const service of services.splice(0)) cleanUp(service);
});

function synth(context: Record<string, unknown>): SynthesizedService {
  const service = synthesize({ providerProfile: 'kie', ...context }, { bundle: false });
  services.push(service);
  return service;
}

function environmentOf(service: SynthesizedService, name: string): Record<string, unknown> {
  const resource = service.template.toJSON().Resources[functionLogicalId(service, name)] as {
    Properties: { Environment: { Variables: Record<string, unknown> } };
  };
  return resource.Properties.Environment.Variables;
}

const PROVIDER_FUNCTIONS = LAMBDAS.filter((definition) => definition.needs.provider).map(({ name }) => name);

describe('upstreams', () => {
  test('without the key a deployment keeps its one upstream: no list, no upstream secret, no upstream alarm', () => {
    // Act
    const service = synth({});

    // Assert
    for (const name of PROVIDER_FUNCTIONS)
      expect(environmentOf(service, name)).not.toHaveProperty('PROVIDER_UPSTREAMS');
    expect(
      Object.keys(
        service.template.findResources('AWS::SecretsManager::Secret', {
          Properties: { Description: Match.stringLikeRegexp('of the upstream') },
        }),
      ),
    ).toEqual([]);
    service.template.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { MetricName: 'UpstreamOutSeconds' }, 0);
  });

  test('with a list: every resource of the one-upstream deployment is kept, each upstream gets its secret and alarm, and the provider functions the list', () => {
    // Prepare
    const one = synth({});
    const before = Object.keys(one.template.toJSON().Resources);
    const secretsBefore = Object.keys(one.template.findResources('AWS::SecretsManager::Secret')).length;

    // Act
    const service = synth({ upstreams: TWO });

    // Assert
    const after = new Set(Object.keys(service.template.toJSON().Resources));
    expect(before.filter((id) => !after.has(id))).toEqual([]);
    service.template.resourceCountIs('AWS::SecretsManager::Secret', secretsBefore + 2);
    for (const upstream of ['kie-a', 'kie-b']) {
      service.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'UpstreamOutSeconds',
        Dimensions: [{ Name: 'Upstream', Value: upstream }],
        Threshold: 180,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
    expect(PROVIDER_FUNCTIONS.length).toBeGreaterThan(0);
    for (const name of PROVIDER_FUNCTIONS) {
      const listed = JSON.stringify(environmentOf(service, name).PROVIDER_UPSTREAMS);
      expect(listed).toContain('kie-a');
      expect(listed).toContain('kie-b');
    }
    const policies = JSON.stringify(service.template.findResources('AWS::IAM::Policy'));
    expect(policies).toMatch(/GetSecretValue.*KieBSecret/s);
  });

  test('reads the list from a file', () => {
    // Prepare
    const dir = mkdtempSync(join(tmpdir(), 'upstreams-'));
    const file = join(dir, 'upstreams.json');
    writeFileSync(file, TWO);

    // Act
    const service = synth({ upstreams: file });
    rmSync(dir, { recursive: true, force: true });

    // Assert
    expect(JSON.stringify(environmentOf(service, 'dispatcher').PROVIDER_UPSTREAMS)).toContain('kie-b');
  });

  test.each([
    ['{', 'upstreams: neither a JSON list nor a file'],
    ['[]', 'upstreams: must be a list of 1 to 16 upstreams'],
    [JSON.stringify([{ name: 'a', profile: 'kie', baseUrl: 'ftp://x' }]), 'upstream "a": baseUrl: required'],
    [JSON.stringify([{ name: 'a', profile: 'acme', baseUrl: 'https://x' }]), 'upstream "a": profile: must be one of'],
    [
      JSON.stringify([{ name: 'a', profile: 'kie', baseUrl: 'https://x', createRateLimit: '20 per 10' }]),
      'upstream "a": createRateLimit: must be <requests>/<seconds>',
    ],
    [
      JSON.stringify([{ name: 'a', profile: 'kie', baseUrl: 'https://x', models: ['image-model-9'] }]),
      'upstream "a": models: unknown model ids: image-model-9',
    ],
    [
      JSON.stringify([{ name: 'a', profile: 'kie', baseUrl: 'https://x', apiKey: 'sk-1' }]),
      'upstream "a": apiKey: never in the configuration',
    ],
    [
      JSON.stringify([
        { name: 'a', profile: 'kie', baseUrl: 'https://x' },
        { name: 'a', profile: 'kie', baseUrl: 'https://y' },
      ]),
      'upstream "a": name: used by another upstream',
    ],
    [
      JSON.stringify([{ name: 'a', profile: 'kie', baseUrl: 'https://x', createRateLimit: '6000/10' }]),
      'upstreams: upstream "a": createRateLimit=6000/10 would make',
    ],
  ])('refuses at synth, naming the upstream and the field: %s', (upstreams, message) => {
    // Act
    const attempt = () => synth({ upstreams });

    // Assert
    expect(attempt).toThrow(message);
  });
});
