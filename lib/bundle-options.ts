/**
 * How every function is bundled (esbuild through `NodejsFunction`, lib/generation-function.ts; the bundle
 * tests and bench/ build with the same): the options and the values fixed at build time (`define`).
 */

/**
 * Settings only the local stack ever sets, fixed empty at build time: `WEBHOOK_INSECURE_ORIGINS` (a
 * local webhook receiver allowed over plain http). The submit functions check `webhookUrl`s, and with
 * the value known to be empty esbuild drops the code that parses it (measured: it kept them within
 * their bundle budget). Deployed, no function has the setting either way.
 */
export const LOCAL_ONLY_DEFINE: Readonly<Record<string, string>> = {
  'process.env.WEBHOOK_INSECURE_ORIGINS': JSON.stringify(''),
};

/**
 * The esbuild options every function is bundled with; the bundle tests and bench/ build with the same.
 * `mainFields` prefers the dependencies' ES module builds, which esbuild can trim where it takes a
 * CommonJS build whole. Measured on get-task (bench/): 629 KB and 85 ms module load as plain CJS,
 * 413 KB and 52 ms with it (ESM output: 413 KB, 61 ms). Names are not kept (`keepNames`): measured,
 * keeping them added 7% to every bundle (get-task 423 KB against 396 KB) and put submit-image over its
 * budget against the true floor (1.27x); the error classes name themselves instead (core/errors.ts).
 */
export const BUNDLE_OPTIONS = {
  target: 'node24',
  minify: true,
  keepNames: false,
  mainFields: ['module', 'main'],
  // The default deployment: cdk.json's `providerProfile` is `kie`.
  define: { ...inlineAuthorizerDefine(false), ...providerProfileDefine('kie'), ...LOCAL_ONLY_DEFINE },
} as const;

/**
 * `INLINE_AUTHORIZER` fixed at build time: only LocalStack deployments (no Lambda authorizer) check
 * credentials inside the handlers, and everywhere else esbuild drops that code (about 7 KB, measured:
 * it kept the submit functions within their bundle budget). The source reads the variable at run time,
 * so the local stack and the tests, which run the source, still choose per process.
 */
export function inlineAuthorizerDefine(inline: boolean): Record<string, string> {
  return { 'process.env.INLINE_AUTHORIZER': JSON.stringify(inline ? 'true' : 'false') };
}

/**
 * `PROVIDER_READS` fixed at build time: a function that only creates provider tasks (submit) gets
 * "off", and esbuild drops the adapter's state-reading code (about 2 KB, measured: it kept the submit
 * functions within their bundle budget once callbacks and profiles had grown them). The source reads
 * the variable at run time, so the local stack and the tests, which run the source, read as usual.
 */
export function providerReadsDefine(needs: { providerReads?: boolean }): Record<string, string> {
  return needs.providerReads === false ? { 'process.env.PROVIDER_READS': JSON.stringify('off') } : {};
}

/**
 * The provider profile fixed at build time (functions/runtime/provider-profile-from-env.ts): with the
 * name known to esbuild, the profiles not chosen are dropped from the bundles (measured: the submit
 * functions stay within their size budget only this way). A custom profile's JSON travels the same way,
 * as it is too large for the environment's 4 KB.
 */
export function providerProfileDefine(name: string, json?: string): Record<string, string> {
  return {
    'process.env.PROVIDER_PROFILE': JSON.stringify(name),
    'process.env.PROVIDER_PROFILE_JSON': JSON.stringify(json ?? ''),
  };
}
