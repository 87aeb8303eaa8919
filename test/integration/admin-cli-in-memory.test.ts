/**
 * Every operator CLI command docs/guides/local-stack.md#the-operator-cli shows, against an in-memory start (`DATA_DIR=:memory: npm
 * start`), found the way a user finds it: by the API port, with DATA_DIR unset or set to `:memory:`,
 * and none of the start's other settings (its default key plan is reported as the stack applies it).
 * `webhooks secret` must seal with the running stack's own key: a real receiver verifies the signed
 * delivery with the secret the CLI printed.
 */
import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { resolve } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { freePorts, type SpawnedLocalStack, spawnLocalStack } from '../../local/spawn-local-stack';

jest.setTimeout(180_000);

const ROOT = resolve(__dirname, '../..');
const CLI = resolve(ROOT, 'bin/run-admin.cjs');
const USER = 'in-memory-user';

interface Run {
  code: number;
  json: Record<string, unknown>;
  stderr: string;
}

interface Received {
  headers: Record<string, string>;
  body: string;
}

describe('operator CLI against an in-memory npm start', () => {
  let stack: SpawnedLocalStack;
  let receiver: Server;
  let origin: string;
  let cliEnv: NodeJS.ProcessEnv;
  const deliveries: Received[] = [];
  let delivered: (entry: Received) => void = () => undefined;

  function admin(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
    return new Promise((done) => {
      execFile(
        process.execPath,
        [CLI, ...args],
        { cwd: ROOT, env: { ...cliEnv, ...extraEnv } },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
          done({ code, json: stdout.trim().startsWith('{') ? JSON.parse(stdout) : {}, stderr });
        },
      );
    });
  }

  beforeAll(async () => {
    const [receiverPort] = await freePorts(1);
    origin = `http://127.0.0.1:${receiverPort}`;
    receiver = createServer((request: IncomingMessage, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const headers = Object.fromEntries(
          Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
        );
        const entry = { headers, body: Buffer.concat(chunks).toString('utf8') };
        deliveries.push(entry);
        response.writeHead(200).end('ok');
        delivered(entry);
      });
    });
    await new Promise<void>((ready) => receiver.listen(receiverPort, '127.0.0.1', () => ready()));
    // Exactly as a user would start it; spawnLocalStack picks free ports and sets DATA_DIR=:memory:.
    stack = await spawnLocalStack({
      env: {
        DATA_DIR: ':memory:',
        WEBHOOK_INSECURE_ORIGINS: origin,
        KEY_RATE_LIMIT: '7',
        KEY_BURST_LIMIT: '9',
        DYNAMODB_ENDPOINT: '',
        API_STAGE: '',
      },
    });
    // The operator's shell: none of the stack's settings but the API port it was started on.
    const {
      DYNAMODB_PORT: _p,
      DYNAMODB_ENDPOINT: _e,
      DATA_DIR: _d,
      TABLE_NAME: _t,
      PORT_BASE: _b,
      WEBHOOK_SECRETS_KEY: _k,
      WEBHOOK_INSECURE_ORIGINS: _o,
      KEY_RATE_LIMIT: _r,
      KEY_BURST_LIMIT: _s,
      KEY_DAILY_QUOTA: _q,
      ...rest
    } = process.env;
    cliEnv = { ...rest, PORT: new URL(stack.baseUrl).port };
  });

  afterAll(async () => {
    await stack?.stop();
    await new Promise<void>((closed) => (receiver ? receiver.close(() => closed()) : closed()));
  });

  it('runs every README command against the in-memory stack, with DATA_DIR unset or :memory:', async () => {
    // Prepare
    const memory = { DATA_DIR: ':memory:' };

    // Act
    const granted = await admin(['credits', 'grant', '--user', USER, '--amount', '50']);
    const shown = await admin(['credits', 'show', '--user', USER], memory);
    const created = await admin(['keys', 'create', '--user', USER, '--name', 'first']);
    const listed = await admin(['keys', 'list', '--user', USER], memory);
    const rotated = await admin(['keys', 'rotate', '--key-id', String(created.json.keyId), '--grace-seconds', '0']);
    const revoked = await admin(['keys', 'revoke', '--key-id', String(rotated.json.keyId)], memory);
    const audited = await admin(['audit', '--user', USER]);
    const limited = await admin(['limits', 'set', '--user', USER, '--rate', '5', '--burst', '10'], memory);
    const limits = await admin(['limits', 'show', '--user', USER]);
    const reset = await admin(['limits', 'reset', '--user', USER], memory);
    const defaultPlan = await admin(['limits', 'show', '--user', 'no-plan-of-its-own']);
    const invited = await admin(['accounts', 'invite', '--email', 'in-memory@example.com', '--user', 'invited']);
    const signedOut = await admin(['accounts', 'revoke-sessions', '--user', 'invited'], memory);
    const cleared = await admin(['webhooks', 'clear', '--user', USER]);
    const alertSet = await admin(['alerts', 'set', '--user', USER, '--low-balance', '20'], memory);
    const alertShown = await admin(['alerts', 'show', '--user', USER]);
    const alertCleared = await admin(['alerts', 'clear', '--user', USER], memory);
    const events = await admin(['webhooks', 'events', '--user', USER]);

    // Assert
    expect(granted).toMatchObject({ code: 0, json: { userId: USER, balance: 50 } });
    expect(shown).toMatchObject({ code: 0, json: { userId: USER, balance: 50 } });
    expect(created.code).toBe(0);
    expect(created.json.apiKey).toMatch(/^gsk_live_/);
    expect(listed.code).toBe(0);
    expect(listed.json.keys).toEqual([expect.objectContaining({ keyId: created.json.keyId })]);
    expect(rotated.code).toBe(0);
    expect(revoked.code).toBe(0);
    expect(audited).toMatchObject({ code: 0, json: { ok: true } });
    expect(limited.code).toBe(0);
    expect(limits).toMatchObject({ code: 0, json: { own: true } });
    expect(reset).toMatchObject({ code: 0, json: { own: false, ratePerSecond: 7, burst: 9 } });
    expect(defaultPlan).toMatchObject({ code: 0, json: { own: false, ratePerSecond: 7, burst: 9, dailyQuota: null } });
    expect(invited.code).toBe(0);
    expect(signedOut.code).toBe(0);
    expect(cleared.code).toBe(0);
    expect(alertSet).toMatchObject({ code: 0, json: { lowBalanceThreshold: 20, lowBalanceSent: false } });
    expect(alertShown).toMatchObject({ code: 0, json: { lowBalanceThreshold: 20 } });
    expect(alertCleared).toMatchObject({ code: 0, json: { lowBalanceThreshold: null } });
    expect(events).toMatchObject({ code: 0, json: { userId: USER, events: [] } });
  });

  it('webhooks secret seals with the running stack key: the delivery verifies with the printed secret', async () => {
    // Prepare
    const made = await admin(['webhooks', 'secret', '--user', USER], { DATA_DIR: ':memory:' });
    const set = await admin(['webhooks', 'set', '--user', USER, '--url', `${origin}/hook`]);
    const shown = await admin(['webhooks', 'show', '--user', USER]);
    const key = await admin(['keys', 'create', '--user', USER, '--name', 'submits']);
    const arrived = new Promise<Received>((done) => {
      delivered = done;
    });

    // Act
    const submitted = await fetch(`${stack.baseUrl}/api/ai/image/generate`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${String(key.json.apiKey)}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'image-model-1', prompt: 'tell me', providerInput: { mockDelayMs: 100 } }),
    });
    const { taskId } = (await submitted.json()) as { taskId: string };
    const delivery = await arrived;
    let described = await admin(['webhooks', 'deliveries', '--user', USER, '--task', taskId]);
    while ((described.json.delivery as { state?: string } | undefined)?.state !== 'delivered') {
      described = await admin(['webhooks', 'deliveries', '--user', USER, '--task', taskId]);
    }

    // Assert
    expect(made.code).toBe(0);
    expect(made.stderr).toBe('');
    expect(set).toMatchObject({ code: 0, json: { url: `${origin}/hook`, hasSecret: true } });
    expect(shown).toMatchObject({ code: 0, json: { url: `${origin}/hook`, hasSecret: true } });
    expect(submitted.status).toBe(202);
    const event = new Webhook(String(made.json.secret)).verify(delivery.body, delivery.headers) as {
      data: { taskId: string };
    };
    expect(event.data.taskId).toBe(taskId);
    expect(described.json.attempts).toEqual([expect.objectContaining({ attempt: 1, statusCode: 200 })]);
  });

  it("with DYNAMODB_PORT set to the start's, still follows its record: webhooks secret seals with its key", async () => {
    // Prepare: the operator's shell also holds the start's DynamoDB port (as the one that ran npm start)
    const user = 'dynamodb-port-user';
    const ownPort = { DYNAMODB_PORT: new URL(stack.dynamodbEndpoint).port };
    const [otherPort] = await freePorts(1);
    const granted = await admin(['credits', 'grant', '--user', user, '--amount', '50'], ownPort);
    const key = await admin(['keys', 'create', '--user', user, '--name', 'submits'], ownPort);
    const arrived = new Promise<Received>((done) => {
      delivered = done;
    });

    // Act
    const made = await admin(['webhooks', 'secret', '--user', user], ownPort);
    const madeInMemory = await admin(['webhooks', 'secret', '--user', `${user}-2`], {
      ...ownPort,
      DATA_DIR: ':memory:',
    });
    const set = await admin(['webhooks', 'set', '--user', user, '--url', `${origin}/port-hook`], ownPort);
    const other = await admin(['webhooks', 'secret', '--user', user], { DYNAMODB_PORT: String(otherPort) });
    const submitted = await fetch(`${stack.baseUrl}/api/ai/image/generate`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${String(key.json.apiKey)}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'image-model-1', prompt: 'by port', providerInput: { mockDelayMs: 100 } }),
    });
    const { taskId } = (await submitted.json()) as { taskId: string };
    const delivery = await arrived;

    // Assert
    expect(granted).toMatchObject({ code: 0, json: { userId: user, balance: 50 } });
    expect(key.code).toBe(0);
    expect(submitted.status).toBe(202);
    expect(made).toMatchObject({ code: 0, stderr: '' });
    expect(madeInMemory).toMatchObject({ code: 0, stderr: '' });
    expect(set).toMatchObject({ code: 0, json: { url: `${origin}/port-hook`, hasSecret: true } });
    // The secret the CLI printed verifies what the running stack signed: it was sealed with the stack's key.
    const event = new Webhook(String(made.json.secret)).verify(delivery.body, delivery.headers) as {
      data: { taskId: string };
    };
    expect(event.data.taskId).toBe(taskId);
    // A DYNAMODB_PORT that is not the start's is refused, naming both, rather than mixed with its record.
    expect(other.code).toBe(2);
    const { error } = JSON.parse(other.stderr) as { error: string };
    expect(error).toContain(`DYNAMODB_PORT=${otherPort} is not the DynamoDB of the local stack running on port`);
    expect(error).toContain(stack.dynamodbEndpoint);
  });

  it('with no in-memory stack on the port, says so plainly and names no path under ":memory:"', async () => {
    // Prepare
    const [nothingThere] = await freePorts(1);

    // Act
    const run = await admin(['webhooks', 'secret', '--user', USER], {
      DATA_DIR: ':memory:',
      PORT: String(nothingThere),
    });

    // Assert
    expect(run.code).toBe(2);
    const { error } = JSON.parse(run.stderr) as { error: string };
    expect(error).toContain(`no in-memory local stack (DATA_DIR=:memory:) is running on port ${nothingThere}`);
    expect(error).not.toMatch(/:memory:\//);
  });
});
