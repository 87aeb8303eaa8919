/**
 * Authentication at the edge: missing, malformed and unknown keys (401) on every route, and a key
 * used from outside its IP allowlist (403).
 */
import { randomBytes } from 'node:crypto';
import { type ApiResponse, createApi, IMAGE_PATH, taskPath, VIDEO_PATH } from './support/api';
import { expectGatewayAnswer as gatewayAnswer } from './support/gateway-answer';
import { loadTarget } from './support/target';

const target = loadTarget();
const api = createApi(target);
/** Requests only: room for a loaded machine's slow answers. */
const TEST_TIMEOUT_MS = 60_000;

const expectGatewayAnswer = (response: ApiResponse, status: number, body: unknown) =>
  gatewayAnswer(target, response, status, body);

const routes: [string, string, unknown][] = [
  ['POST image', IMAGE_PATH, { model: 'image-model-1', prompt: 'x' }],
  ['POST video', VIDEO_PATH, { model: 'video-d3', prompt: 'x', inputMode: 'text_to_video' }],
  ['GET task', taskPath('00000000-0000-4000-8000-000000000000'), undefined],
];

/** Well-formed like a real key, but never issued. */
const unknownKey = `gsk_live_${randomBytes(32).toString('base64url')}`;

const credentials: [string, Record<string, string>][] = [
  ['no Authorization header', {}],
  ['the Basic scheme', { Authorization: `Basic ${Buffer.from('user:password').toString('base64')}` }],
  ['a bearer token that is not a key', { Authorization: 'Bearer not-a-key' }],
  ['an unknown key', { Authorization: `Bearer ${unknownKey}` }],
  ['the key without a scheme', { Authorization: target.key('main').apiKey }],
];

describe.each(routes)('%s', (_route, path, json) => {
  test.concurrent.each(credentials)(
    '%s -> 401 Unauthorized',
    async (_name, headers) => {
      const response = await api.request(path, { json, headers });

      expectGatewayAnswer(response, 401, { error: 'Unauthorized' });
    },
    TEST_TIMEOUT_MS,
  );
});

if (target.runs('ipAllowlist')) {
  test.concurrent(
    'a valid key used from outside its IP allowlist -> 403 Forbidden',
    async () => {
      const apiKey = target.key('ipRestricted').apiKey;

      const read = await api.request(taskPath('00000000-0000-4000-8000-000000000000'), { apiKey });
      const submit = await api.request(IMAGE_PATH, { apiKey, json: { model: 'image-model-1', prompt: 'x' } });

      expectGatewayAnswer(read, 403, { error: 'Forbidden' });
      expectGatewayAnswer(submit, 403, { error: 'Forbidden' });
    },
    TEST_TIMEOUT_MS,
  );
}
