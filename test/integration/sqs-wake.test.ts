/**
 * The dispatcher's wake-up message (functions/aws/sqs.ts) through the SQS SDK client over real HTTP, to a
 * stand-in that answers SendMessage as SQS does (AWS JSON 1.0, the body's MD5): the request is signed,
 * names the queue, and its delay is whole seconds within SQS's 0-900.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SQSClient } from '@aws-sdk/client-sqs';
import { sendDelayedMessage } from '../../functions/aws/sqs';

interface Received {
  target: string | undefined;
  authorization: string | undefined;
  body: { QueueUrl?: string; MessageBody?: string; DelaySeconds?: number };
}

describe('the wake-up message to SQS', () => {
  let server: Server;
  let sqs: SQSClient;
  const received: Received[] = [];
  const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/wake';

  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      const parts: Buffer[] = [];
      req.on('data', (part: Buffer) => parts.push(part));
      req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    });

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      const body = JSON.parse(await read(req)) as Received['body'];
      received.push({
        target: req.headers['x-amz-target'] as string | undefined,
        authorization: req.headers.authorization,
        body,
      });
      const md5 = createHash('md5')
        .update(body.MessageBody ?? '')
        .digest('hex');
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify({ MessageId: `m-${received.length}`, MD5OfMessageBody: md5 }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    sqs = new SQSClient({
      region: 'eu-west-1',
      endpoint: `http://127.0.0.1:${port}`,
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
    });
  });

  afterAll(async () => {
    sqs.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('sends one signed SendMessage naming the queue, its delay rounded up to whole seconds', async () => {
    // Act
    await sendDelayedMessage({ queueUrl: QUEUE_URL, body: '{"wakeAt":1}', delaySeconds: 0.3 }, sqs);

    // Assert
    expect(received.at(-1)).toEqual({
      target: 'AmazonSQS.SendMessage',
      authorization: expect.stringMatching(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/sqs\/aws4_request/,
      ),
      body: { QueueUrl: QUEUE_URL, MessageBody: '{"wakeAt":1}', DelaySeconds: 1 },
    });
  });

  it("keeps the delay within SQS's 0 to 900 seconds", async () => {
    // Act
    await sendDelayedMessage({ queueUrl: QUEUE_URL, body: 'late', delaySeconds: 3_600 }, sqs);
    await sendDelayedMessage({ queueUrl: QUEUE_URL, body: 'now', delaySeconds: -5 }, sqs);

    // Assert
    expect(received.slice(-2).map((message) => message.body.DelaySeconds)).toEqual([900, 0]);
  });
});
