/**
 * The typed client's retry rules, against a real HTTP server that answers as the service does under
 * contention or faults: a retried submit keeps its Idempotency-Key, honours Retry-After, and stops on
 * an answer that retrying cannot change.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, GenerationClient } from '../../client/src/index';

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

/** A server answering the queued answers in order and recording each request's Idempotency-Key. */
async function serve(answers: Answer[]): Promise<{ url: string; keys: (string | undefined)[]; server: Server }> {
  const keys: (string | undefined)[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    keys.push(req.headers['idempotency-key'] as string | undefined);
    req.resume();
    const answer = answers.shift() ?? { status: 500, body: { error: 'no more answers' } };
    res.writeHead(answer.status, { 'Content-Type': 'application/json', ...answer.headers });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', () => ready()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, keys, server };
}

const submission = { taskId: 't-1', status: 0, creditsUsed: 3 };
const body = { model: 'image-model-1' as const, prompt: 'a lighthouse' };

describe('the typed client', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((closed) => (server ? server.close(() => closed()) : closed()));
  });

  test('retries a 503 and a 500 with the same Idempotency-Key, then returns the 202 answer', async () => {
    // Prepare
    const backend = await serve([
      { status: 503, body: { error: 'Busy' }, headers: { 'Retry-After': '0' } },
      { status: 500, body: { error: 'Internal error' } },
      { status: 202, body: submission },
    ]);
    server = backend.server;
    const client = new GenerationClient({ baseUrl: backend.url, apiKey: 'gsk_test', backoffMs: 1 });

    // Act
    const result = await client.submitImage(body);

    // Assert
    expect(result).toEqual(submission);
    expect(backend.keys).toHaveLength(3);
    expect(new Set(backend.keys).size).toBe(1);
    expect(backend.keys[0]).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('does not retry a 402 and reports its body', async () => {
    // Prepare
    const backend = await serve([{ status: 402, body: { error: 'Insufficient credits', required: 3, balance: 0 } }]);
    server = backend.server;
    const client = new GenerationClient({ baseUrl: backend.url, apiKey: 'gsk_test', backoffMs: 1 });

    // Act
    const failure = await client.submitImage(body).catch((error: unknown) => error);

    // Assert
    expect(failure).toBeInstanceOf(ApiError);
    expect(failure).toMatchObject({ status: 402, body: { required: 3, balance: 0 } });
    expect(backend.keys).toHaveLength(1);
  });

  test('two submits get different keys; a caller-chosen key is sent as given', async () => {
    // Prepare
    const backend = await serve([
      { status: 202, body: submission },
      { status: 202, body: submission },
      { status: 202, body: submission },
    ]);
    server = backend.server;
    const client = new GenerationClient({ baseUrl: backend.url, apiKey: 'gsk_test' });

    // Act
    await client.submitImage(body);
    await client.submitImage(body);
    await client.submitImage(body, { idempotencyKey: 'order-42' });

    // Assert
    expect(backend.keys[0]).not.toBe(backend.keys[1]);
    expect(backend.keys[2]).toBe('order-42');
  });

  test('gives up after its retries and reports the last answer', async () => {
    // Prepare
    const busy = { status: 429, body: { error: 'Too many requests' }, headers: { 'Retry-After': '0' } };
    const backend = await serve([busy, busy, busy]);
    server = backend.server;
    const client = new GenerationClient({ baseUrl: backend.url, apiKey: 'gsk_test', retries: 2 });

    // Act
    const failure = await client.getTask('t-1').catch((error: unknown) => error);

    // Assert
    expect(failure).toMatchObject({ status: 429 });
    expect(backend.keys).toHaveLength(3);
  });
});
