/**
 * Jest global teardown of the e2e project (jest runs it even when tests failed). In local mode it
 * checks the ledger invariant for every user of the run, then always stops the stack; a violation
 * throws, which fails the run.
 */
import { releaseSharedDynamoDb } from '../../support/shared-dynamodb';
import { ledgerViolations, type RunningLocalStack } from './local-stack';

declare global {
  // Set by global-setup.ts in this same process.
  var __e2eLocalStack: RunningLocalStack | undefined;
}

export default async function teardown(): Promise<void> {
  const stack = globalThis.__e2eLocalStack;
  globalThis.__e2eLocalStack = undefined;
  if (!stack) return;
  let violations: string[];
  try {
    violations = await ledgerViolations(stack.store);
  } finally {
    stack.store.doc.destroy();
    await stack.stop();
    await releaseSharedDynamoDb();
  }
  if (violations.length > 0) {
    throw new Error(`Ledger invariant violated after the e2e run:\n${violations.join('\n')}`);
  }
}
