/**
 * A seam for watching the AWS calls the functions make, so a test run can check each one against the
 * deployed IAM policy (test/integration/iam-simulation.test.ts, docs/decisions/0015-iam-simulation-of-recorded-calls.md).
 * Nothing is watched unless the local stack installs an observer (`AWS_CALL_RECORD_FILE`): deployed,
 * the clients get no middleware and the signers one `undefined` check.
 */

/** One call as the code made it, before IAM names it (the local stack's recorder translates it). */
export interface ObservedAwsCall {
  /** The SDK's or the signer's service name: `dynamodb`, `sqs`, `apigateway`, `s3`, `secretsmanager`. */
  service: string;
  /** The SDK command (`GetItemCommand`), or the signed form (`Request`, `PresignUrl`, `PresignPost`). */
  operation: string;
  /** The command's input (DynamoDB: marshalled), or the signed request's method, URL, headers and fields. */
  input: unknown;
}

/** Receives every observed call; must not throw. */
export type AwsCallObserver = (call: ObservedAwsCall) => void;

let observer: AwsCallObserver | undefined;

/** Installs (or, with undefined, removes) the observer; clients made afterwards carry the middleware. */
export function setAwsCallObserver(next: AwsCallObserver | undefined): void {
  observer = next;
}

/** The installed observer, if any. */
export function awsCallObserver(): AwsCallObserver | undefined {
  return observer;
}

/**
 * The structural shape of an SDK v3 client's middleware stack, enough to add one middleware without
 * importing the SDK's types into core.
 */
interface MiddlewareStackLike {
  add(
    middleware: (
      next: (args: { input: unknown }) => Promise<unknown>,
      context: { commandName?: string },
    ) => (args: { input: unknown }) => Promise<unknown>,
    options: { step: 'build'; name: string },
  ): void;
}

/**
 * Adds the recording middleware to an SDK v3 client when an observer is installed; no-op otherwise.
 * At the build step the input is what goes on the wire (DynamoDB: after the document client's
 * marshalling), so the partition keys read there are the ones IAM sees.
 */
export function observeClient(service: string, client: { middlewareStack: unknown }): void {
  const observe = observer;
  if (!observe) return;
  (client.middlewareStack as MiddlewareStackLike).add(
    (next, context) => async (args) => {
      observe({ service, operation: context.commandName ?? 'unknown', input: args.input });
      return next(args);
    },
    { step: 'build', name: 'awsCallObserver' },
  );
}
