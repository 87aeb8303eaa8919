/**
 * Upstreams as configuration, deployed (docs/guides/upstreams.md): `-c upstreams=<json or a file
 * path>`, checked at synth (each problem names the upstream and the field), gives every upstream its own
 * key secret, lists them to the functions that call the provider (`PROVIDER_UPSTREAMS`, with each
 * secret's ARN) and alarms when one is out for minutes. Without the key nothing here is made: a
 * deployment keeps its one upstream and its resources.
 */
import { existsSync, readFileSync } from 'node:fs';
import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Metric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct, type Node } from 'constructs';
import { MODELS } from '../../functions/core/catalog';
import { KIE_PROFILE } from '../../functions/core/profiles/kie';
import { MOCK_PROFILE } from '../../functions/core/profiles/mock';
import { checkCapacityItemFits } from '../../functions/core/provider-capacity';
import { formatUpstreams, parseUpstreams, type UpstreamConfig } from '../../functions/core/upstreams';
import { PROVIDER_UPSTREAMS } from '../../functions/environment/environment';
import { METRICS_NAMESPACE, MetricName } from '../../functions/observability/metrics';
import type { ServiceFunctions } from './service-functions';
import { acknowledge, pascal } from './support';

/** An upstream out (cooling off, probed) longer than this raises its alarm. */
export const UPSTREAM_OUT_ALARM_SECONDS = 180;

/**
 * The upstreams of the context key `upstreams` (JSON, or the path of a JSON file), checked; undefined
 * without the key. `serviceProfile` is the deployment's profile name (`providerProfile`), which an
 * upstream may name besides the shipped ones.
 * @throws Error naming `upstreams`, the upstream and the field of each problem
 */
export function upstreamsFromContext(node: Node, serviceProfile: string): UpstreamConfig[] | undefined {
  const raw: unknown = node.tryGetContext('upstreams');
  if (raw === undefined || raw === '') return undefined;
  let value = raw;
  if (typeof raw === 'string' && !raw.trim().startsWith('[')) {
    if (!existsSync(raw)) throw new Error(`upstreams: neither a JSON list nor a file: "${raw}"`);
    value = readFileSync(raw, 'utf8');
  }
  const upstreams = parseUpstreams(value, 'upstreams', {
    profiles: [...new Set([MOCK_PROFILE.name, KIE_PROFILE.name, serviceProfile])],
    models: MODELS.map((model) => model.id),
    keysInline: false,
  });
  for (const upstream of upstreams) {
    const label = `upstreams: upstream "${upstream.name}"`;
    checkCapacityItemFits(
      {
        ...(upstream.createRateLimit ? { createRateLimit: upstream.createRateLimit } : {}),
        ...(upstream.maxInFlight === undefined ? {} : { maxInFlight: upstream.maxInFlight }),
      },
      { createRateLimit: `${label}: createRateLimit`, maxInFlight: `${label}: maxInFlight` },
    );
  }
  return upstreams;
}

/** Props of {@link ServiceUpstreams}. */
export interface ServiceUpstreamsProps {
  upstreams: readonly UpstreamConfig[];
  functions: ServiceFunctions;
}

/** Each upstream's secret, the functions' list of upstreams, and an alarm per upstream. */
export class ServiceUpstreams extends Construct {
  /** One per upstream: raised when it has been out for more than {@link UPSTREAM_OUT_ALARM_SECONDS}. */
  readonly alarms: readonly Alarm[];

  constructor(scope: Construct, id: string, props: ServiceUpstreamsProps) {
    super(scope, id);
    const secrets = props.upstreams.map((upstream) => this.secretOf(upstream));
    const listed = props.upstreams.map((upstream, index) => ({
      ...upstream,
      secretArn: secrets[index]?.secretArn ?? '',
    }));
    for (const [definition, fn] of props.functions.entries()) {
      if (!definition.needs.provider) continue;
      fn.addEnvironment(PROVIDER_UPSTREAMS.name, formatUpstreams(listed));
      for (const secret of secrets) {
        const arn = secret.secretFullArn ?? `${secret.secretArn}-??????`;
        fn.addToRolePolicy(new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [arn] }));
        secret.encryptionKey?.grantDecrypt(fn);
      }
    }
    this.alarms = props.upstreams.map(
      (upstream) =>
        new Alarm(this, `${pascal(upstream.name)}OutAlarm`, {
          alarmDescription: `The upstream "${upstream.name}" has been out (its sends failing: 5xx, unreachable, timeouts) for more than ${UPSTREAM_OUT_ALARM_SECONDS / 60} minutes; its tasks go to the other upstreams serving their models (npm run admin -- upstreams show)`,
          metric: new Metric({
            namespace: METRICS_NAMESPACE,
            metricName: MetricName.UpstreamOutSeconds,
            dimensionsMap: { Upstream: upstream.name },
            statistic: 'Maximum',
            period: Duration.minutes(5),
          }),
          threshold: UPSTREAM_OUT_ALARM_SECONDS,
          evaluationPeriods: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          // The dispatcher reports after each run; no run means nothing queued, nothing to fail over.
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
    );
  }

  /** The upstream's own secret: the one it names (`secretArn`), else a new one holding a placeholder. */
  private secretOf(upstream: UpstreamConfig): ISecret {
    const id = `${pascal(upstream.name)}Secret`;
    if (upstream.secretArn !== undefined) {
      return upstream.secretArn.startsWith('arn:')
        ? Secret.fromSecretCompleteArn(this, id, upstream.secretArn)
        : Secret.fromSecretNameV2(this, id, upstream.secretArn);
    }
    const secret = new Secret(this, id, {
      description: `API key of the upstream "${upstream.name}"; replace the generated placeholder with the real key`,
      generateSecretString: { passwordLength: 32, excludePunctuation: true },
    });
    acknowledge(
      secret,
      'AwsSolutions-SMG4',
      'A third-party provider API key: it can only be rotated at the provider, by the operator (put-secret-value), so there is no rotation Lambda to attach',
    );
    return secret;
  }
}
