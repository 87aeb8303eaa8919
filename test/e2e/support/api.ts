/**
 * The suite's only way to the service: fetch against the target's base URL.
 */
import type { Target } from './target';

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body, or `undefined` when the body is empty or not JSON. */
  body: unknown;
  text: string;
}

/** A task as the status endpoint returns it (the fields the suite reads). */
export interface TaskBody {
  taskId: string;
  type: string;
  status: number;
  model: string;
  prompt: string;
  imageUrls?: string[];
  videoUrl?: string;
  errorCode?: string;
  errorMessage?: string;
  creditsUsed: number;
  creditsRefunded: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Sent as `Authorization: Bearer <apiKey>`; omit for no Authorization header. */
  apiKey?: string;
  /** A value is JSON-encoded with `Content-Type: application/json`; a string or Buffer is sent as is. */
  json?: unknown;
  body?: string | Buffer;
  headers?: Record<string, string>;
}

export const IMAGE_PATH = '/api/ai/image/generate';
export const VIDEO_PATH = '/api/ai/video/generate';
export const taskPath = (taskId: string): string => `/api/ai/tasks/${encodeURIComponent(taskId)}`;

/** Any http(s) URL does as a reference image: the mock provider never fetches it. */
export const REFERENCE_IMAGE = 'https://example.com/reference.png';

const POLL_INTERVAL_MS = 250;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

import { checkAgainstContract } from './contract';

export function createApi(target: Target) {
  async function request(path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.apiKey !== undefined) headers.Authorization = `Bearer ${options.apiKey}`;
    let body = options.body;
    if (options.json !== undefined) {
      headers['Content-Type'] ??= 'application/json';
      body = JSON.stringify(options.json);
    }
    const response = await fetch(`${target.baseUrl}${path}`, {
      method: options.method ?? (body === undefined ? 'GET' : 'POST'),
      headers,
      body,
    });
    const text = await response.text();
    const method = options.method ?? (body === undefined ? 'GET' : 'POST');
    const parsed = parseJson(text);
    checkAgainstContract(method, path, response.status, response.headers.get('content-type') ?? '', parsed);
    return { status: response.status, headers: response.headers, body: parsed, text };
  }

  /** Submits a task and checks the acceptance answer (202, Location, submission body). */
  async function submit(
    path: typeof IMAGE_PATH | typeof VIDEO_PATH,
    json: Record<string, unknown>,
    apiKey: string = target.key('main').apiKey,
    headers: Record<string, string> = {},
  ): Promise<{ taskId: string; creditsUsed: number; status: number; response: ApiResponse }> {
    const response = await request(path, { apiKey, json, headers });
    if (response.status !== 202) {
      throw new Error(`POST ${path} answered ${response.status}, expected 202: ${response.text}`);
    }
    const body = response.body as { taskId: string; status: number; creditsUsed: number };
    return { taskId: body.taskId, creditsUsed: body.creditsUsed, status: body.status, response };
  }

  /** Reads a task; throws unless the answer is 200. */
  async function getTask(taskId: string, apiKey: string = target.key('main').apiKey): Promise<TaskBody> {
    const response = await request(taskPath(taskId), { apiKey });
    if (response.status !== 200) {
      throw new Error(`GET ${taskPath(taskId)} answered ${response.status}: ${response.text}`);
    }
    return response.body as TaskBody;
  }

  /** Polls every ~250 ms until the task is terminal (status 1 or 2); bounded. */
  async function pollUntilDone(
    taskId: string,
    options: { apiKey?: string; timeoutMs?: number } = {},
  ): Promise<TaskBody> {
    const timeoutMs = options.timeoutMs ?? target.pollTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    let task = await getTask(taskId, options.apiKey);
    while (task.status === 0) {
      if (Date.now() > deadline) {
        throw new Error(`Task ${taskId} still pending after ${timeoutMs} ms: ${JSON.stringify(task)}`);
      }
      await sleep(POLL_INTERVAL_MS);
      task = await getTask(taskId, options.apiKey);
    }
    return task;
  }

  return { request, submit, getTask, pollUntilDone };
}

/** Downloads a result URL (absolute, no credentials: it is served or signed for anyone who has it). */
export async function download(url: string): Promise<{ status: number; contentType: string; bytes: Buffer }> {
  const response = await fetch(url);
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', bytes };
}

/** PNG signature (first 8 bytes). */
export const isPng = (bytes: Buffer): boolean =>
  bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

/** An ISO BMFF (MP4) file starts with a box whose type, at bytes 4-7, is `ftyp`. */
export const isMp4 = (bytes: Buffer): boolean => bytes.length > 8 && bytes.subarray(4, 8).toString('latin1') === 'ftyp';
