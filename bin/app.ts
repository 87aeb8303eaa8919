/**
 * The CDK app (cdk.json runs it with `npx tsx bin/app.ts`). Configuration comes from cdk.json context
 * and `-c key=value`; see lib/config.ts for every key.
 */
import { App } from 'aws-cdk-lib';
import { buildServiceApp } from '../lib/service-app';

buildServiceApp(new App());
