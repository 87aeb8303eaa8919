/**
 * `npm start`: runs the whole service locally and stops it cleanly on Ctrl-C.
 */
import { watchOwner } from './owner-watch';
import { localSettingsFromEnv } from './settings';
import { LocalStackError, startSettingsDynamoDb } from './start-dynamodb';

/** How long a stop for a vanished owner may take before the process exits anyway: no one else will. */
const OWNER_GONE_STOP_MS = 30_000;

/**
 * A reader of our output that went away (the owner of a spawned stack, killed) must not crash the stack
 * with EPIPE mid-request: the owner watch decides when it stops, and stops it cleanly.
 */
function ignoreClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

async function main(): Promise<void> {
  const settings = localSettingsFromEnv();
  const log = (line: string) => process.stdout.write(`${line}\n`);
  // Until the stack is ready there is nothing to stop cleanly (as on a Ctrl-C then, which ends the
  // process at once): exit, and DynamoDB Local's watchdog (local/dynamodb-local.ts) ends its JVM.
  let onOwnerGone = (): void => {
    process.stderr.write(`The owner process ${settings.exitWithPid} (EXIT_WITH_PID) is gone: exiting\n`);
    process.exit(1);
  };
  if (settings.exitWithPid !== undefined) {
    ignoreClosedPipe(process.stdout);
    ignoreClosedPipe(process.stderr);
    watchOwner(settings.exitWithPid, () => onOwnerGone());
  }
  // DynamoDB Local's JVM is the long pole: it starts first, while the rest of the code loads and the
  // dashboard is built.
  const dynamodb = startSettingsDynamoDb(settings);
  dynamodb.catch(() => undefined); // its failure is reported by startLocalStack
  // The dashboard is built from its sources when they changed since the last build, unless
  // DASHBOARD_DIR names a folder of files built elsewhere.
  // Loaded only now (esbuild's load too), while the JVM starts.
  if (!process.env.DASHBOARD_DIR) (await import('../dashboard/build')).buildDashboardWhenStale();
  const { DEMO_CREDITS, DEMO_USER, startLocalStack } = await import('./stack');
  const stack = await startLocalStack(settings, log, dynamodb);
  // Installed before the ready line, so whoever reacts to it can stop us cleanly at once.
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    stack.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`Stopping failed: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  onOwnerGone = () => {
    // Nobody is left to escalate a stop that hangs: bounded here (unref'd: a stop that ends sooner
    // exits sooner).
    setTimeout(() => process.exit(1), OWNER_GONE_STOP_MS).unref();
    shutdown(`The owner process ${settings.exitWithPid} (EXIT_WITH_PID) is gone`);
  };

  log(
    `DynamoDB Local at ${stack.dynamodbEndpoint} (${settings.dataDir === ':memory:' ? 'in memory' : `data in ${settings.dataDir}`})`,
  );
  log(`Mock provider at ${stack.mockProvider.url}`);
  log(`OpenID provider at ${stack.oidcIssuer} (stands in for Cognito)`);
  log(`Dashboard at ${stack.url}/ ; sign in at ${stack.apiUrl}/api/auth/sign-in`);
  log(`  as ${stack.demoSignIn.email} with password ${stack.demoSignIn.password} (new every start)`);
  const { apiKey, endsAt } = stack.demoKey;
  const auth = `-H "Authorization: Bearer ${apiKey}"`;
  const json = '-H "Content-Type: application/json"';
  log(
    endsAt
      ? `Demo user "${DEMO_USER}" (kept from an earlier start). A key for this run, working until ${endsAt.toISOString()}, shown only now:`
      : `Demo user "${DEMO_USER}" has ${DEMO_CREDITS} credits. Its API key is shown only now:`,
  );
  log(`  ${apiKey}`);
  log('Submit an image or a video task, then poll it with the taskId from the answer:');
  log(
    `  curl -s -X POST ${stack.apiUrl}/api/ai/image/generate ${auth} ${json} -d '{"model":"image-model-1","prompt":"a lighthouse at dusk"}'`,
  );
  log(
    `  curl -s -X POST ${stack.apiUrl}/api/ai/video/generate ${auth} ${json} -d '{"model":"video-b-2-text-to-video","inputMode":"text_to_video","prompt":"waves at dusk"}'`,
  );
  log(`  curl -s ${stack.apiUrl}/api/ai/tasks/<taskId> ${auth}`);
  log(
    `The mock provider calls back when a task ends, so a result shows up within about a second; a task whose callback is lost is asked about at most every ${settings.providerRefreshIntervalSeconds} s (PROVIDER_REFRESH_INTERVAL_SECONDS).`,
  );
  log(
    settings.dataDir === ':memory:'
      ? `Nothing is kept (DATA_DIR=:memory:). The operator CLI finds this stack while it runs by its port: npm run --silent admin -- <command>${settings.port === 3000 ? '' : ` with PORT=${settings.port}`}.`
      : `Data is kept in ${settings.dataDir}; to start over, stop and delete it (rm -rf ${settings.dataDir}).`,
  );
  if (settings.mockProviderCreateRateLimit || settings.mockProviderMaxInFlight) {
    const rate = settings.mockProviderCreateRateLimit;
    log(
      `The mock provider refuses (429, Retry-After) createTask beyond ${rate ? `${rate.requests} per ${rate.windowSeconds} s` : 'no rate'}${settings.mockProviderMaxInFlight ? ` and beyond ${settings.mockProviderMaxInFlight} tasks in flight` : ''} (MOCK_PROVIDER_CREATE_RATE_LIMIT, MOCK_PROVIDER_MAX_IN_FLIGHT).`,
    );
  }
  if (settings.dispatchDriver === 'deployed') {
    log(
      'The dispatcher and the stream workers run on their deployed triggers (DISPATCH_DRIVER=deployed): the table stream through the mappings, SQS wake-ups in whole seconds.',
    );
  }
  log('Ports: PORT, MOCK_PROVIDER_PORT, OIDC_PROVIDER_PORT, DYNAMODB_PORT, or all at once: PORT_BASE=4000 npm start.');
  log(`API ready at ${stack.apiUrl}`);
}

main().catch((error: unknown) => {
  const message = error instanceof LocalStackError ? error.message : ((error as Error).stack ?? String(error));
  process.stderr.write(`npm start failed: ${message}\n`);
  process.exit(1);
});
