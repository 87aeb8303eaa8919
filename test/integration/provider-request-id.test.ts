/**
 * The provider adapter sends the service's request id as `X-Request-Id`, so a task can be followed in
 * the provider's logs; over real HTTP to a capturing stand-in.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { withInvocation } from '../../functions/observability/logger';
import { createHttpProvider } from '../../functions/provider/http-provider';

let server: Server;
let baseUrl: string;
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    const createTask = req.url?.startsWith('/api/v1/jobs/createTask');
    res.end(
      JSON.stringify(
        createTask
          ? { code: 200, msg: 'success', data: { taskId: 'p-1' } }
          : { code: 200, msg: 'success', data: { taskId: 'p-1', state: 'generating' } },
      ),
    );
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', () => ready()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((closed) => server.close(() => closed()));
});

test('createTask and recordInfo carry the request id of the invocation, and none outside one', async () => {
  // Prepare
  seen.length = 0;
  const provider = createHttpProvider({ baseUrl, apiKey: async () => 'k' });
  const inRequest = withInvocation(
    async () => {
      await provider.createTask({ model: 'm', input: { prompt: 'p' } });
      await provider.getTask('p-1');
    },
    () => 'req-7f3a',
  );

  // Act
  await inRequest();
  await provider.getTask('p-1');

  // Assert
  expect(seen.map((headers) => headers['x-request-id'])).toEqual(['req-7f3a', 'req-7f3a', undefined]);
});
