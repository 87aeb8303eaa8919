/** What the browser project's global setup hands its test files (one JSON environment variable). */
export const BROWSER_CONTEXT_ENV = 'BROWSER_TEST_CONTEXT';

export interface BrowserTestContext {
  /** The local stack: API and dashboard on one origin. */
  baseUrl: string;
  chromium: string;
  /** The invited account of the run, signing in through the local OpenID provider. */
  account: { email: string; password: string; userId: string; credits: number };
  /** A second invited account, closed by test/browser/account.test.ts. */
  closingAccount: { email: string; password: string; userId: string; credits: number };
  /** Where screenshots go (gitignored). */
  screenshotDir: string;
  /** The stack's DynamoDB Local and table: a test holds the dispatcher back through its capacity item. */
  dynamodbEndpoint: string;
  tableName: string;
  /**
   * The Webhooks test's account, and the origin its receiver listens on (held by the global setup until
   * the file takes it over, test/browser/support/held-port.ts; the stack may send to it over plain http).
   */
  webhooks: { account: { email: string; password: string; userId: string }; receiverOrigin: string };
}

/** The context, in a test file. */
export function loadBrowserContext(): BrowserTestContext {
  const raw = process.env[BROWSER_CONTEXT_ENV];
  if (!raw) throw new Error(`${BROWSER_CONTEXT_ENV} is not set: run these tests through jest's "browser" project`);
  return JSON.parse(raw) as BrowserTestContext;
}
