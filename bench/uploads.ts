/**
 * Section 12: uploads (issue 27) on the local stack as `npm start` runs it (in this process, so the
 * gateway's counters can be read): a 10 MB PNG through the presigned POST to the S3 stand-in, then an
 * image-to-image task that uses it.
 *
 * - Time to the 201 of `POST /api/ai/uploads`, the upload itself (the presigned POST of 10 MB), the
 *   submit (to its 202, the upload's check included: record, ranged GET of the first bytes) and the
 *   task's end (the dispatcher signs the upload's GET URL; the mock provider downloads the 10 MB).
 * - Bytes that passed through a Lambda for the upload: the request bodies the gateway handed to route
 *   handlers while the file was sent, against the bytes the storage stand-in read. Goal: 0.
 */
import { randomBytes } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import { freePorts } from '../local/spawn-local-stack';
import type { LocalStack } from '../local/stack';
import { bytes, goal, median, ms, note, onCleanup, out, runCleanups, table } from './support';

const RUNS = 5;
/** 1826 x 1826 RGB, stored (not compressed): a 10 MB PNG. */
const SIDE = 1826;

/** A real PNG of about 10 MB: random pixels, deflate level 0, with CRCs. */
function tenMegabytePng(): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(SIDE, 0);
  header.writeUInt32BE(SIDE, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows = randomBytes(SIDE * (SIDE * 3 + 1));
  for (let row = 0; row < SIDE; row++) rows[row * (SIDE * 3 + 1)] = 0; // filter type: none
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows, { level: 0 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export async function uploadFigures(): Promise<void> {
  out('## 12. Uploads: a 10 MB reference image through the presigned POST, then an image-to-image task');
  out();
  note('starting the local stack in this process (its gateway counts what reaches the Lambdas)');
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
    TABLE_NAME: 'bench-uploads',
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
  const png = tenMegabytePng();
  note(`uploading a ${bytes(png.length)}-byte PNG ${RUNS} times`);

  const samples: {
    created: number;
    upload: number;
    submit: number;
    done: number;
    lambdaDuringUpload: number;
    storageDuringUpload: number;
    createBody: number;
    submitBody: number;
  }[] = [];
  for (let run = 0; run < RUNS; run++) {
    const t0 = performance.now();
    const beforeCreate = stack.traffic();
    const created = await fetch(`${stack.apiUrl}/api/ai/uploads`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ contentType: 'image/png', size: png.length }),
    });
    if (created.status !== 201) throw new Error(`POST /api/ai/uploads answered ${created.status}`);
    const answer = (await created.json()) as { uploadUrl: string; uploadFields: Record<string, string>; url: string };
    const t1 = performance.now();
    const beforeUpload = stack.traffic();
    const form = new FormData();
    for (const [name, value] of Object.entries(answer.uploadFields)) form.append(name, value);
    form.append('file', new Blob([png], { type: 'image/png' }), 'reference.png');
    const stored = await fetch(answer.uploadUrl, { method: 'POST', body: form });
    await stored.arrayBuffer();
    if (stored.status !== 204) throw new Error(`the presigned POST answered ${stored.status}`);
    const t2 = performance.now();
    const afterUpload = stack.traffic();
    const submitted = await fetch(`${stack.apiUrl}/api/ai/image/generate`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        model: 'image-model-1',
        prompt: 'bench: the reference, in winter',
        inputImageUrls: [answer.url],
        providerInput: { mockDelayMs: 0 },
      }),
    });
    if (submitted.status !== 202) throw new Error(`submit answered ${submitted.status}: ${await submitted.text()}`);
    const { taskId } = (await submitted.json()) as { taskId: string };
    const t3 = performance.now();
    const afterSubmit = stack.traffic();
    let status = 0;
    while (status === 0) {
      const task = await fetch(`${stack.apiUrl}/api/ai/tasks/${taskId}`, { headers: auth });
      status = ((await task.json()) as { status: number }).status;
      if (status === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (status !== 1) throw new Error(`task ${taskId} ended with status ${status}`);
    const t4 = performance.now();
    samples.push({
      created: t1 - t0,
      upload: t2 - t1,
      submit: t3 - t2,
      done: t4 - t0,
      lambdaDuringUpload: afterUpload.lambdaRequestBytes - beforeUpload.lambdaRequestBytes,
      storageDuringUpload: afterUpload.storageRequestBytes - beforeUpload.storageRequestBytes,
      createBody: beforeUpload.lambdaRequestBytes - beforeCreate.lambdaRequestBytes,
      submitBody: afterSubmit.lambdaRequestBytes - afterUpload.lambdaRequestBytes,
    });
  }
  const pick = (key: keyof (typeof samples)[number]) => samples.map((sample) => sample[key]);
  const row = (label: string, values: number[]) => [
    label,
    ms(median(values)),
    ms(Math.min(...values)),
    ms(Math.max(...values)),
  ];
  table(
    ['Step (ms)', `median of ${RUNS}`, 'min', 'max'],
    [
      row('`POST /api/ai/uploads` to its 201', pick('created')),
      row(`presigned POST of the ${(png.length / 1e6).toFixed(1)} MB file to the S3 stand-in (204)`, pick('upload')),
      row('submit (image-to-image, the upload checked) to its 202', pick('submit')),
      row('from the first request to status 1 (the provider downloads the 10 MB)', pick('done')),
    ],
    ['l', 'r', 'r', 'r'],
  );
  const lambdaDuringUpload = Math.max(...pick('lambdaDuringUpload'));
  table(
    ['Bytes (largest of the runs)', 'through a Lambda', 'read by storage'],
    [
      ['`POST /api/ai/uploads` (JSON)', bytes(Math.max(...pick('createBody'))), '0'],
      [
        'the file (presigned POST, multipart form)',
        bytes(lambdaDuringUpload),
        bytes(Math.max(...pick('storageDuringUpload'))),
      ],
      ['the submit (JSON, with the upload:// reference)', bytes(Math.max(...pick('submitBody'))), '0'],
    ],
    ['l', 'r', 'r'],
  );
  goal(
    'no byte of the upload passes through a Lambda',
    lambdaDuringUpload === 0,
    `${bytes(lambdaDuringUpload)} request bytes reached the route Lambdas while ${bytes(png.length)} bytes of file went to storage`,
  );
}
