/**
 * Every AWS call checked against its deployed policy (issue 38). A local stack records each call its
 * handlers make (AWS_CALL_RECORD_FILE, local/aws-call-recorder.ts) while this file drives a journey
 * through every function: sign-in, session, key management, alerts and spend limit, uploads, image
 * and video tasks (the dispatcher, the provider's callback, the media and webhook workers), a cancel,
 * the listings, credits and usage, the sweeper on its timer. Each distinct call is then evaluated with
 * an offline IAM simulator against that function's statements in the synthesized template
 * (test/support/iam-simulation.ts): a call the deployed role would deny fails the test with the
 * function, the call and the statements it has for the action. Grants no call used are written to
 * test-results/iam-unused-grants.txt for review (not a failure: some are used by Lambda itself, and some
 * by paths this journey does not take).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { USAGE_PLAN_API_TAG } from '../../functions/aws/usage-plans';
import { grantCredits } from '../../functions/money/grant';
import { putApiKey } from '../../functions/money/key-issue';
import { createDocumentClient, type StoreContext } from '../../functions/store/client';
import { inviteAccount } from '../../functions/store/invites';
import { putWebhookSecret, setWebhookUrl } from '../../functions/store/webhook-settings';
import { createSecretBox } from '../../functions/webhooks/secret-box';
import { LAMBDAS } from '../../lib/routes';
import { parseRecording, type Recording } from '../../local/aws-call-recorder';
import { DYNAMODB_LOCAL_CLIENT_CONFIG } from '../../local/dynamodb-local';
import { LOCAL_DEFAULT_PLAN_ID } from '../../local/usage-plans';
import { Browser, signIn } from '../e2e/support/browser';
import {
  cleanUp,
  functionLogicalId,
  type SynthesizedService,
  statementsOfFunction,
  synthesize,
} from '../infra/support';
import {
  describeRefusal,
  type SimulationReport,
  simulateCalls,
  type TemplateResources,
} from '../support/iam-simulation';
import { tinyPng } from '../support/png';
import { spawnTestStack, type TestStack } from '../support/test-stack';

/** Each wait for a state of the stack, on the wall clock: generous, for a loaded machine. */
const WAIT_MS = 120_000;
const STACK_READY_MS = 180_000;
const USER = 'iam-journey';
const SIGN_IN = { email: 'iam-journey@iam.test', password: randomBytes(12).toString('base64url') };
const WEBHOOK_SECRETS_KEY = randomBytes(32).toString('base64url');
const REPORT = resolve(__dirname, '../../test-results/iam-unused-grants.txt');
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

describe('IAM simulation of every recorded AWS call', () => {
  let workDir: string;
  let recordFile: string;
  let stack: TestStack | undefined;
  let service: SynthesizedService | undefined;
  let store: StoreContext | undefined;
  let receiver: Server | undefined;
  let recording: Recording;
  let report: SimulationReport;

  beforeAll(
    async () => {
      workDir = mkdtempSync(join(tmpdir(), 'iam-simulation-'));
      recordFile = join(workDir, 'aws-calls.jsonl');
      // A webhook receiver that takes every delivery.
      receiver = createServer((request, response) => {
        request.resume();
        request.on('end', () => response.writeHead(204).end());
      });
      await new Promise<void>((listening) => receiver?.listen(0, '127.0.0.1', () => listening()));
      const address = receiver.address();
      const origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const starting = spawnTestStack({
        readyTimeoutMs: STACK_READY_MS,
        env: {
          AWS_CALL_RECORD_FILE: recordFile,
          PROVIDER_REFRESH_INTERVAL_SECONDS: '1',
          SWEEPER_INTERVAL_SECONDS: '1',
          AUTHORIZER_CACHE_TTL_SECONDS: '',
          LOCAL_IDP_ACCOUNTS: `${SIGN_IN.email}:${SIGN_IN.password}`,
          WEBHOOK_SECRETS_KEY,
          WEBHOOK_INSECURE_ORIGINS: origin,
        },
      });
      // The template is synthesized (without bundles) while the stack starts in its own process.
      service = synthesize({}, { bundle: false });
      stack = await starting;
      store = {
        doc: createDocumentClient({ ...DYNAMODB_LOCAL_CLIENT_CONFIG, endpoint: stack.dynamodbEndpoint }),
        tableName: stack.tableName,
      };
      const now = new Date();
      await grantCredits(store, { userId: USER, amount: 10_000, grantId: 'iam-journey' });
      await inviteAccount(store, { email: SIGN_IN.email, userId: USER });
      const box = createSecretBox(async () => WEBHOOK_SECRETS_KEY);
      await putWebhookSecret(store, { userId: USER, sealedSecret: await box.seal(USER, 'whsec-journey'), now });
      await setWebhookUrl(store, { userId: USER, url: `${origin}/hook`, now });
      const { apiKey } = await putApiKey(store, { userId: USER, name: 'iam journey' });

      await journey(stack.baseUrl, apiKey, `${origin}/endpoint`);
      await waitFor('every function of the registry to run', () => {
        const invoked = parseRecording(readFileSync(recordFile, 'utf8')).invoked;
        const missing = LAMBDAS.map((lambda) => lambda.name).filter((name) => !invoked.has(name));
        return missing.length === 0 ? true : `not yet run: ${missing.join(', ')}`;
      });
      // Stopped before reading, so every invocation in flight has finished writing its calls.
      await stack.stop();
      stack = undefined;
      recording = parseRecording(readFileSync(recordFile, 'utf8'));

      const built = service;
      const statements = new Map(
        LAMBDAS.map((lambda) => [
          lambda.name,
          statementsOfFunction(built.template, functionLogicalId(built, lambda.name)),
        ]),
      );
      report = await simulateCalls(
        recording.calls,
        statements,
        built.template.toJSON().Resources as TemplateResources,
        { localDefaultPlanId: LOCAL_DEFAULT_PLAN_ID, usagePlanApiTag: USAGE_PLAN_API_TAG },
      );
      writeReport(report, recording);
    },
    STACK_READY_MS + 4 * WAIT_MS,
  );

  afterAll(async () => {
    store?.doc.destroy();
    await stack?.stop();
    await new Promise<void>((closed) => (receiver ? receiver.close(() => closed()) : closed()));
    cleanUp(service);
    rmSync(workDir, { recursive: true, force: true });
  });

  test('every function of the registry ran, and the calls recorded cover the table, the uploads and API Gateway', () => {
    const names = LAMBDAS.map((lambda) => lambda.name);
    const withCalls = new Set(recording.calls.flatMap((call) => (call.function ? [call.function] : [])));

    expect(names.filter((name) => !recording.invoked.has(name))).toEqual([]);
    // No call from the model catalog and the OpenAPI document (they touch no AWS service), nor from the
    // sign-in's start, whose one AWS call deployed (the OpenID client secret) is a plain value locally.
    expect(names.filter((name) => !withCalls.has(name)).sort()).toEqual(['auth-sign-in', 'list-models', 'openapi']);
    const actions = new Set(recording.calls.map((call) => call.action));
    expect([...actions]).toEqual(
      expect.arrayContaining([
        'dynamodb:GetItem',
        'dynamodb:Query',
        'dynamodb:PutItem',
        's3:PutObject',
        'apigateway:POST',
      ]),
    );
  });

  test('the deployed policies would allow every recorded call', () => {
    const refusals = report.refusals.map(describeRefusal);

    expect(refusals).toEqual([]);
  });

  test('the simulator refuses what a policy lacks: the same calls without their DeleteItem grants are denied', async () => {
    const built = service as SynthesizedService;
    const deletes = recording.calls.filter((call) => call.action === 'dynamodb:DeleteItem' && call.function);
    expect(deletes.length).toBeGreaterThan(0);
    const withoutDeletes = new Map(
      LAMBDAS.map((lambda) => [
        lambda.name,
        statementsOfFunction(built.template, functionLogicalId(built, lambda.name)).filter(
          (statement) =>
            !(Array.isArray(statement.Action) ? statement.Action : [statement.Action]).includes('dynamodb:DeleteItem'),
        ),
      ]),
    );

    const stripped = await simulateCalls(
      deletes,
      withoutDeletes,
      built.template.toJSON().Resources as TemplateResources,
      { localDefaultPlanId: LOCAL_DEFAULT_PLAN_ID, usagePlanApiTag: USAGE_PLAN_API_TAG },
    );

    expect(stripped.refusals.length).toBeGreaterThan(0);
    expect(stripped.refusals.every((refusal) => refusal.call.action === 'dynamodb:DeleteItem')).toBe(true);
    expect(stripped.refusals.map(describeRefusal).join('\n')).toMatch(
      /ImplicitlyDenied; the policy's statements for dynamodb:DeleteItem: none/,
    );
  });
});

/** Polls `check` (true, or what is still missing) until true or the budget runs out. */
async function waitFor(what: string, check: () => true | string | Promise<true | string>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  let last: true | string = 'never checked';
  while (Date.now() < deadline) {
    last = await check();
    if (last === true) return;
    await sleep(250);
  }
  throw new Error(`Timed out waiting for ${what}: ${last}`);
}

/** The calls of the journey, each answered as expected (a refusal here would hide calls). */
async function journey(base: string, apiKey: string, endpointUrl: string): Promise<void> {
  const api = async (path: string, init: { method?: string; json?: unknown } = {}) => {
    const response = await fetch(`${base}${path}`, {
      method: init.method ?? (init.json === undefined ? 'GET' : 'POST'),
      headers: {
        Authorization: `Bearer ${apiKey}`,
        ...(init.json === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const expectStatus = (what: string, got: { status: number; body: unknown }, ...wanted: number[]) => {
    if (!wanted.includes(got.status)) throw new Error(`${what} answered ${got.status}: ${JSON.stringify(got.body)}`);
  };

  // The dashboard's side: sign-in through the local OpenID provider, then everything a session does.
  const browser = new Browser();
  const landed = await signIn(browser, base, SIGN_IN);
  expectStatus('sign-in', landed, 200);
  const me = await browser.request(`${base}/api/session`);
  expectStatus('GET /api/session', me, 200);
  const csrf = (me.body as { csrfToken: string }).csrfToken;
  const withSession = async (method: string, path: string, json?: unknown) => {
    const cookie = await browser.jar.getCookieString(`${base}${path}`);
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        Cookie: cookie,
        Origin: base,
        'X-CSRF-Token': csrf,
        ...(json === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(json === undefined ? {} : { body: JSON.stringify(json) }),
      redirect: 'manual',
    });
    const text = await response.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // A redirect or a page: the status says enough.
    }
    return { status: response.status, body };
  };
  expectStatus('GET /api/keys', await withSession('GET', '/api/keys'), 200);
  const created = await withSession('POST', '/api/keys', { name: 'iam laptop' });
  expectStatus('POST /api/keys', created, 201);
  const keyId = String(created.body.keyId);
  expectStatus(
    'PATCH /api/keys/{id}',
    await withSession('PATCH', `/api/keys/${keyId}`, { spendLimit: { credits: 1_000, period: 'day' } }),
    200,
  );
  const rotated = await withSession('POST', `/api/keys/${keyId}/rotate`, { graceSeconds: 0 });
  expectStatus('rotate', rotated, 201);
  expectStatus('revoke', await withSession('POST', `/api/keys/${String(rotated.body.keyId)}/revoke`), 200);
  expectStatus('GET /api/audit', await withSession('GET', '/api/audit'), 200);
  expectStatus('GET alerts', await withSession('GET', '/api/account/alerts'), 200);
  expectStatus('PUT alerts', await withSession('PUT', '/api/account/alerts', { lowBalanceThreshold: 50 }), 200);
  expectStatus('GET spend limit', await withSession('GET', '/api/account/spend-limit'), 200);
  const limit = { spendLimit: { credits: 5_000, period: 'month' } };
  expectStatus('PUT spend limit', await withSession('PUT', '/api/account/spend-limit', limit), 200);
  // Issue 39: the account's own webhook endpoint, every route of it (the test event goes out through
  // the worker; its delivery is then redelivered), and deleted at the end.
  const endpoint = await withSession('POST', '/api/webhooks', { url: endpointUrl, events: ['task.completed'] });
  expectStatus('POST /api/webhooks', endpoint, 201);
  const endpointPath = `/api/webhooks/${String(endpoint.body.id)}`;
  expectStatus('GET /api/webhooks', await withSession('GET', '/api/webhooks'), 200);
  expectStatus('GET endpoint', await withSession('GET', endpointPath), 200);
  expectStatus('PATCH endpoint', await withSession('PATCH', endpointPath, { description: 'iam' }), 200);
  expectStatus('rotate endpoint secret', await withSession('POST', `${endpointPath}/rotate-secret`, {}), 200, 201);
  const tested = await withSession('POST', `${endpointPath}/test`, {});
  expectStatus('test endpoint', tested, 200, 201, 202);
  expectStatus('GET deliveries', await withSession('GET', `${endpointPath}/deliveries`), 200);
  const redeliverPath = `${endpointPath}/deliveries/${String(tested.body.deliveryId)}/redeliver`;
  await waitFor('the test event delivered, to be redelivered', async () => {
    const again = await withSession('POST', redeliverPath, {});
    return again.status < 300 ? true : `redeliver answered ${again.status}`;
  });
  expectStatus('DELETE endpoint', await withSession('DELETE', endpointPath), 200, 204);

  // The API's side, with a key: an upload used by an image task, a video task cancelled, the readings.
  const png = tinyPng();
  const upload = await api('/api/ai/uploads', { json: { contentType: 'image/png', size: png.length } });
  expectStatus('POST /api/ai/uploads', upload, 201);
  const form = new FormData();
  for (const [name, value] of Object.entries(upload.body.uploadFields as Record<string, string>)) {
    form.append(name, value);
  }
  form.append('file', new Blob([png], { type: 'image/png' }), 'file');
  const stored = await fetch(String(upload.body.uploadUrl), { method: 'POST', body: form });
  expectStatus('the presigned POST', { status: stored.status, body: await stored.text() }, 204);
  const image = await api('/api/ai/image/generate', {
    // With a retention (issue 40): the submit schedules its removal (RETENTION#<n>).
    json: {
      model: 'image-model-1',
      prompt: 'a harbour, from my sketch',
      inputImageUrls: [String(upload.body.url)],
      resultRetention: '1h',
    },
  });
  expectStatus('POST image', image, 202);
  const video = await api('/api/ai/video/generate', {
    json: { model: 'video-d3', prompt: 'waves', inputMode: 'text_to_video' },
  });
  expectStatus('POST video', video, 202);
  expectStatus('cancel', await api(`/api/ai/tasks/${String(video.body.taskId)}/cancel`, { json: {} }), 200, 409);
  for (const path of [
    '/api/ai/tasks',
    '/api/ai/credits',
    '/api/ai/usage',
    '/api/events',
    '/api/ai/models',
    '/api/openapi.json',
  ]) {
    expectStatus(`GET ${path}`, await api(path), 200);
  }
  // The image task to its end: the dispatcher sends it, the provider calls back, the media worker copies
  // the result, the webhook worker delivers the event.
  await waitFor('the image task to end', async () => {
    const task = await api(`/api/ai/tasks/${String(image.body.taskId)}`);
    return task.body.status === 0 ? 'still pending' : true;
  });
  // Issue 40: the ended task deleted (its files, then the task), and the upload deleted.
  expectStatus('DELETE task', await api(`/api/ai/tasks/${String(image.body.taskId)}`, { method: 'DELETE' }), 204);
  expectStatus(
    'DELETE upload',
    await api(`/api/ai/uploads/${String(upload.body.uploadId)}`, { method: 'DELETE' }),
    204,
  );

  // Sign-out, and then sign-out everywhere from a second sign-in.
  expectStatus('sign-out', await withSession('POST', '/api/auth/sign-out'), 200, 204, 302, 303);
  const again = new Browser();
  expectStatus('second sign-in', await signIn(again, base, SIGN_IN), 200);
  const session = await again.request(`${base}/api/session`);
  const everywhere = await again.request(`${base}/api/auth/sign-out-everywhere`, {
    method: 'POST',
    headers: { Origin: base, 'X-CSRF-Token': (session.body as { csrfToken: string }).csrfToken },
  });
  expectStatus('sign-out everywhere', everywhere, 200, 204);

  // Issue 40: the account's export, then its closure (last: it ends the journey's key and sessions).
  const third = new Browser();
  expectStatus('third sign-in', await signIn(third, base, SIGN_IN), 200);
  const thirdCsrf = ((await third.request(`${base}/api/session`)).body as { csrfToken: string }).csrfToken;
  expectStatus('GET /api/account/export', await third.request(`${base}/api/account/export`), 200);
  const closed = await third.request(`${base}/api/account/close`, {
    json: { confirm: 'close my account' },
    headers: { Origin: base, 'X-CSRF-Token': thirdCsrf },
  });
  expectStatus('POST /api/account/close', closed, 200);
}

function writeReport(report: SimulationReport, recording: Recording): void {
  const lines = [
    '# IAM simulation of the recorded AWS calls (test/integration/iam-simulation.test.ts)',
    '',
    '## Distinct calls evaluated, by function',
    ...LAMBDAS.map(
      (lambda) =>
        `${lambda.name}: ${report.callsByFunction.get(lambda.name) ?? 0}${recording.invoked.has(lambda.name) ? '' : ' (never ran)'}`,
    ),
    '',
    '## Refused',
    ...(report.refusals.length > 0 ? report.refusals.map(describeRefusal) : ['none']),
    '',
    '## Granted but not used by any recorded call (for review; not a failure)',
    ...[...report.unusedGrants].flatMap(([name, grants]) => [`${name}:`, ...grants.map((grant) => `  ${grant}`)]),
    '',
  ];
  mkdirSync(resolve(REPORT, '..'), { recursive: true });
  writeFileSync(REPORT, lines.join('\n'));
}
