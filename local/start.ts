/**
 * `npm start`: runs the whole service locally and stops it cleanly on Ctrl-C.
 */
import { localSettingsFromEnv } from './settings';
import { DEMO_CREDITS, DEMO_USER, LocalStackError, startLocalStack } from './stack';

async function main(): Promise<void> {
  // Node 20 is supported here; the SDK's notice about its future Node 22 floor would only add noise.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const settings = localSettingsFromEnv();
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const stack = await startLocalStack(settings, log);
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

  log(
    `DynamoDB Local at ${stack.dynamodbEndpoint} (${settings.dataDir === ':memory:' ? 'in memory' : `data in ${settings.dataDir}`})`,
  );
  log(`Mock provider at ${stack.mockProvider.url}`);
  log(`OpenID provider at ${stack.oidcIssuer} (stands in for Cognito)`);
  log(`Dashboard at ${stack.url}/ ; sign in at ${stack.apiUrl}/api/auth/sign-in`);
  log(`  as ${stack.demoSignIn.email} with password ${stack.demoSignIn.password} (new every start)`);
  if (stack.demoApiKey) {
    const auth = `-H "Authorization: Bearer ${stack.demoApiKey}"`;
    log(`Demo user "${DEMO_USER}" has ${DEMO_CREDITS} credits. Its API key is shown only now:`);
    log(`  ${stack.demoApiKey}`);
    log('Submit a task, then poll it with the taskId from the answer:');
    log(
      `  curl -s -X POST ${stack.apiUrl}/api/ai/image/generate ${auth} -H "Content-Type: application/json" -d '{"model":"image-model-1","prompt":"a lighthouse at dusk"}'`,
    );
    log(`  curl -s ${stack.apiUrl}/api/ai/tasks/<taskId> ${auth}`);
  } else {
    log(
      `Demo user "${DEMO_USER}" already exists. New key: npm run --silent admin -- keys create --user ${DEMO_USER} --name laptop`,
    );
  }
  log(`API ready at ${stack.apiUrl}`);
}

main().catch((error: unknown) => {
  const message = error instanceof LocalStackError ? error.message : ((error as Error).stack ?? String(error));
  process.stderr.write(`npm start failed: ${message}\n`);
  process.exit(1);
});
