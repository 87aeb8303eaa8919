/**
 * The real upstream's quirks, served over real HTTP by a stand-in that answers exactly what the
 * documented provider sends (the mock provider speaks the clean protocol): `message` where createTask
 * says `msg`, `failCode` as "" or a number, epoch-millisecond times, and the callback body.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHttpProvider, parseProviderCallback } from '../../functions/provider/http-provider';
import type { GenerationProvider } from '../../functions/provider/port';

let server: Server;
let provider: GenerationProvider;
/** What the stand-in answers next: HTTP status and JSON body. */
let answer: { status: number; body: unknown } = { status: 200, body: {} };

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const text = JSON.stringify(answer.body);
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
    });
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', () => ready()));
  const { port } = server.address() as AddressInfo;
  provider = createHttpProvider({ baseUrl: `http://127.0.0.1:${port}`, apiKey: async () => 'k', timeoutMs: 5000 });
});

afterAll(async () => {
  await new Promise<void>((closed) => server.close(() => closed()));
});

/** A recordInfo answer with `data` merged over a running task. */
const recordInfo = (data: Record<string, unknown>, envelope: Record<string, unknown> = {}) => ({
  status: 200,
  body: {
    code: 200,
    message: 'success',
    data: { taskId: 't1', model: 'google/nano-banana', state: 'generating', param: '{}', ...data },
    ...envelope,
  },
});

describe('recordInfo as the upstream sends it', () => {
  test('a failure with failCode as a number keeps it as text, with the failMsg', async () => {
    // Prepare
    answer = recordInfo({ state: 'fail', failCode: 501, failMsg: 'content policy', completeTime: 1763900000123 });

    // Act
    const status = await provider.getTask('t1');

    // Assert
    expect(status).toEqual({
      state: 'fail',
      resultUrls: [],
      failCode: '501',
      failMessage: 'content policy',
      finishedAt: new Date(1763900000123),
    });
  });

  test('failCode "" means no code; the message alone is kept', async () => {
    // Prepare
    answer = recordInfo({ state: 'fail', failCode: '', failMsg: 'upstream timeout' });

    // Act
    const status = await provider.getTask('t1');

    // Assert
    expect(status).toEqual({ state: 'fail', resultUrls: [], failMessage: 'upstream timeout' });
  });

  test('times are milliseconds: completeTime becomes finishedAt, a time in seconds is ignored', async () => {
    // Prepare
    const urls = ['https://tempfile.example/a.png'];

    // Act
    answer = recordInfo({
      state: 'success',
      resultJson: JSON.stringify({ resultUrls: urls }),
      completeTime: '1763900000999',
    });
    const inMillis = await provider.getTask('t1');
    answer = recordInfo({
      state: 'success',
      resultJson: JSON.stringify({ resultUrls: urls }),
      completeTime: 1763900000,
    });
    const inSeconds = await provider.getTask('t1');

    // Assert
    expect(inMillis).toEqual({ state: 'success', resultUrls: urls, finishedAt: new Date(1763900000999) });
    expect(inSeconds).toEqual({ state: 'success', resultUrls: urls });
  });

  test('an error envelope says `message` (not `msg`), and the error carries it', async () => {
    // Prepare
    answer = { status: 200, body: { code: 404, message: 'recordInfo is null', data: null } };

    // Act
    const read = provider.getTask('t1');

    // Assert
    await expect(read).rejects.toThrow('getTask: provider answered code 404 ("recordInfo is null")');
  });
});

describe('createTask refusals', () => {
  test('the refusal text is read from `msg`, or from `message` when that is what came', async () => {
    // Prepare
    const request = { model: 'google/nano-banana', input: { prompt: 'x' } };

    const refusal = async (body: unknown, status = 200) => {
      answer = { status, body };
      return provider.createTask(request).catch((error: unknown) => error);
    };

    // Act
    const withMsg = await refusal({ code: 422, msg: 'image_size is invalid' });
    const withMessage = await refusal({ code: 422, message: 'model does not exist' }, 422);

    // Assert
    expect(withMsg).toMatchObject({ name: 'ProviderRejectedError', message: 'image_size is invalid' });
    expect(withMessage).toMatchObject({ name: 'ProviderRejectedError', message: 'model does not exist' });
  });
});

describe('parseProviderCallback', () => {
  test('a success callback names the task and its result URLs', () => {
    // Prepare
    const body = {
      code: 200,
      msg: 'Playground task completed successfully.',
      data: {
        taskId: 'task_1',
        state: 'success',
        resultJson: '{"resultUrls":["https://tempfile.example/r.mp4"]}',
        failCode: null,
        failMsg: null,
        completeTime: 1763900001000,
      },
    };

    // Act
    const parsed = parseProviderCallback(body);

    // Assert
    expect(parsed).toEqual({
      providerTaskId: 'task_1',
      status: { state: 'success', resultUrls: ['https://tempfile.example/r.mp4'], finishedAt: new Date(1763900001000) },
    });
  });

  test('a failure reported with its code in the envelope keeps the failure, the text from msg', () => {
    // Act
    const parsed = parseProviderCallback({
      code: 501,
      msg: 'Image generation task failed',
      data: { taskId: 'task_2', state: 'fail', failCode: '', failMsg: '' },
    });

    // Assert
    expect(parsed).toEqual({
      providerTaskId: 'task_2',
      status: { state: 'fail', resultUrls: [], failMessage: 'Image generation task failed' },
    });
  });

  test.each([
    ['not an object', 'nope'],
    ['no task id', { code: 200, data: { state: 'success', resultJson: '{"resultUrls":["https://x.example/a.png"]}' } }],
    ['an error code without a failed task', { code: 500, data: { taskId: 't', state: 'generating' } }],
    ['success without result URLs', { code: 200, data: { taskId: 't', state: 'success', resultJson: '{}' } }],
    ['an unknown state', { code: 200, data: { taskId: 't', state: 'exploded' } }],
  ])('a body with %s is refused', (_case, body) => {
    // Act
    const parse = () => parseProviderCallback(body);

    // Assert
    expect(parse).toThrow(/^callback: /);
  });
});
