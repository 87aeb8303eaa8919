/**
 * Section: deleting (issue 40) on the local stack as `npm start` runs it: a video task whose result is
 * a 50 MB file (the mock provider's `mockResultBytes`), copied by the media worker, then
 * `DELETE /api/ai/tasks/{id}`: the time to its 204, and to the result URL no longer downloading (the
 * file gone). Locally the results are files (the deployed bucket takes one DeleteObject per key).
 */
import { freePorts } from '../local/spawn-local-stack';
import type { LocalStack } from '../local/stack';
import { median, ms, note, onCleanup, out, runCleanups, table } from './support';

const RUNS = 3;
const RESULT_BYTES = 50_000_000;

export async function deletingFigures(): Promise<void> {
  out('## Deleting: a video task with a 50 MB result');
  out();
  note('starting the local stack in this process');
  const [port, dynamodbPort, mockProviderPort, oidcProviderPort] = await freePorts(4);
  const { localSettingsFromEnv } = await import('../local/settings');
  const { startLocalStack } = await import('../local/stack');
  const settings = localSettingsFromEnv({
    ...process.env,
    PORT: String(port),
    DYNAMODB_PORT: String(dynamodbPort),
    MOCK_PROVIDER_PORT: String(mockProviderPort),
    OIDC_PROVIDER_PORT: String(oidcProviderPort),
    DATA_DIR: ':memory:',
    DYNAMODB_ENDPOINT: '',
    TABLE_NAME: 'bench-deleting',
    LOG_LEVEL: 'error',
    METRICS: 'off',
    PROVIDER_REFRESH_INTERVAL_SECONDS: '1',
  });
  process.env.LOG_LEVEL = 'error';
  process.env.METRICS = 'off';
  const stack = await startLocalStack(settings, () => undefined);
  onCleanup(() => stack.stop());
  try {
    await measure(stack);
  } finally {
    await runCleanups();
  }
}

async function measure(stack: LocalStack): Promise<void> {
  const auth = { Authorization: `Bearer ${stack.demoKey.apiKey}` };
  const samples: { toNoContent: number; toGone: number; size: number }[] = [];
  for (let run = 0; run < RUNS; run++) {
    const submitted = await fetch(`${stack.apiUrl}/api/ai/video/generate`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        model: 'video-b-2-text-to-video',
        inputMode: 'text_to_video',
        prompt: 'bench: a clip to delete',
        providerInput: { mockDelayMs: 0, mockResultBytes: RESULT_BYTES },
      }),
    });
    if (submitted.status !== 202) throw new Error(`submit answered ${submitted.status}: ${await submitted.text()}`);
    const { taskId } = (await submitted.json()) as { taskId: string };
    let task: { status: number; videoUrl?: string } = { status: 0 };
    while (task.status === 0) {
      task = (await (await fetch(`${stack.apiUrl}/api/ai/tasks/${taskId}`, { headers: auth })).json()) as typeof task;
      if (task.status === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (task.status !== 1 || !task.videoUrl) throw new Error(`task ${taskId} ended with status ${task.status}`);
    const head = await fetch(task.videoUrl);
    const size = Number(head.headers.get('content-length') ?? 0);
    await head.body?.cancel();
    const t0 = performance.now();
    const deleted = await fetch(`${stack.apiUrl}/api/ai/tasks/${taskId}`, { method: 'DELETE', headers: auth });
    const t1 = performance.now();
    if (deleted.status !== 204) throw new Error(`DELETE answered ${deleted.status}`);
    let status = 200;
    while (status !== 404) {
      const download = await fetch(task.videoUrl);
      await download.body?.cancel();
      status = download.status;
    }
    samples.push({ toNoContent: t1 - t0, toGone: performance.now() - t0, size });
  }
  const row = (label: string, values: number[]) => [
    label,
    ms(median(values)),
    ms(Math.min(...values)),
    ms(Math.max(...values)),
  ];
  table(
    ['Step (ms)', `median of ${RUNS}`, 'min', 'max'],
    [
      row(
        `\`DELETE /api/ai/tasks/{id}\` of a video task (result ${(Math.max(...samples.map((s) => s.size)) / 1e6).toFixed(1)} MB) to its 204`,
        samples.map((s) => s.toNoContent),
      ),
      row(
        'from the DELETE to the result URL answering 404 (the file gone)',
        samples.map((s) => s.toGone),
      ),
    ],
    ['l', 'r', 'r', 'r'],
  );
}
