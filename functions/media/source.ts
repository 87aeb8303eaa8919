/**
 * Fetching a result file from the provider, with the checks both media adapters share. The URL comes
 * from the provider's answer and is treated as hostile input:
 *
 * - where: `source-policy.ts` decides which URLs and addresses are allowed. Host names are resolved
 *   here and the connection is made to the checked address itself (a custom `lookup` on the request),
 *   so a DNS answer that changes between the check and the connect (rebinding) cannot slip through.
 *   Redirects are followed by hand, at most `MAX_REDIRECTS`, each hop checked like the first.
 * - what: only the media types of `MEDIA_TYPES` for the task's kind, and the first bytes must carry
 *   that format's signature, so a body that lies about its type (an SVG or HTML page sent as
 *   `image/png`) is refused before anything is stored.
 * - how much: a deadline, and a size limit enforced on the declared length and again while streaming.
 *
 * Node's `http`/`https` are used instead of `fetch` because `fetch` (undici) takes no per-request
 * `lookup`, and undici's own dispatcher API is not importable from Node's built-in copy.
 */
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import type { TaskType } from '../core/task';
import { MEDIA_TYPES } from './media-types';
import { MediaCopyError } from './port';
import { type PinnedAddress, pinnedLookup, type ResolveHost, resolvePublicAddress } from './public-address';
import { bareHost, isTrustedOrigin, refuseUrl, type SourcePolicy } from './source-policy';

/** Default size limits per kind; a generated image is a few MB, a short clip tens of MB. */
export const DEFAULT_MAX_BYTES: Readonly<Record<TaskType, number>> = {
  image: 50 * 1024 * 1024,
  video: 500 * 1024 * 1024,
};

/** Default deadline for one copy (source download and upload together). */
export const DEFAULT_COPY_TIMEOUT_MS = 120_000;

/** Redirect hops followed per source; each is checked like the first request. */
export const MAX_REDIRECTS = 3;

/** Spellings some servers use, mapped to the canonical type. */
const TYPE_ALIASES: Readonly<Record<string, string>> = { 'image/jpg': 'image/jpeg', 'image/pjpeg': 'image/jpeg' };

/** Types that say nothing about the format; the signature then decides. */
const GENERIC_TYPES = new Set(['', 'application/octet-stream', 'binary/octet-stream']);

/** Bytes read before deciding the format (the longest signature checked is 12 bytes). */
const SNIFF_BYTES = 12;

export interface OpenedSource {
  /** The canonical media type (`image/png`), from the allowlist, confirmed by the file's signature. */
  contentType: string;
  /** The declared `Content-Length`, when the source sent a valid one. */
  declaredBytes: number | undefined;
  /** The body, erroring with `MediaCopyError` as soon as it passes the limit or the declared length. */
  body: ReadableStream<Uint8Array>;
  /** Bytes that went through `body` so far. */
  bytesRead(): number;
}

export type { ResolveHost } from './public-address';

export interface OpenSourceOptions {
  policy: SourcePolicy;
  /** Default: the system resolver (`dns.lookup` with `all`). */
  resolve?: ResolveHost;
}

/**
 * Requests `sourceUrl` and checks where it leads, its status, type, signature and declared size before
 * any byte is stored.
 * @throws MediaCopyError on any failure; the response body is released. Its message is for the logs
 *   (it names the source's origin and path, never its query, which may carry a token).
 */
export async function openSource(
  sourceUrl: string,
  kind: TaskType,
  maxBytes: number,
  signal: AbortSignal,
  options: OpenSourceOptions,
): Promise<OpenedSource> {
  const response = await fetchChecked(sourceUrl, signal, options);
  const where = response.where;
  const release = () => response.message.destroy();

  const status = response.message.statusCode ?? 0;
  if (status < 200 || status > 299) {
    release();
    throw new MediaCopyError(`Source ${where} answered HTTP ${status}`);
  }
  const declaredType = normaliseType(response.message.headers['content-type']);
  const allowed = MEDIA_TYPES[kind];
  if (!(declaredType in allowed) && !GENERIC_TYPES.has(declaredType)) {
    release();
    throw new MediaCopyError(
      `Source ${where} has content type "${declaredType.slice(0, 100)}", not an allowed ${kind} type`,
    );
  }
  const declaredBytes = parseLength(response.message.headers['content-length']);
  if (declaredBytes !== undefined && declaredBytes > maxBytes) {
    release();
    throw new MediaCopyError(`Source ${where} declares ${declaredBytes} bytes, over the ${maxBytes}-byte limit`);
  }

  const reader = (Readable.toWeb(response.message) as unknown as ReadableStream<Uint8Array>).getReader();
  let prefix: Uint8Array;
  try {
    prefix = await readPrefix(reader, SNIFF_BYTES);
  } catch (error) {
    release();
    throw new MediaCopyError(
      signal.aborted
        ? `Source ${where} timed out before its first bytes`
        : `Source ${where} failed before its first bytes`,
      { cause: error },
    );
  }
  const sniffed = sniffType(prefix, kind);
  const contentType = GENERIC_TYPES.has(declaredType) ? sniffed : declaredType;
  if (!contentType || sniffed !== contentType) {
    await reader.cancel().catch(() => undefined);
    release();
    throw new MediaCopyError(
      `Source ${where} sent ${sniffed ? `${sniffed} bytes` : 'bytes of no allowed format'} labelled "${declaredType}"`,
    );
  }

  let read = 0;
  const limit = declaredBytes ?? maxBytes;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      read += chunk.byteLength;
      if (read > limit) {
        controller.error(
          new MediaCopyError(
            declaredBytes === undefined
              ? `Source ${where} sent more than the ${maxBytes}-byte limit`
              : `Source ${where} sent more than its declared ${declaredBytes} bytes`,
          ),
        );
        return;
      }
      controller.enqueue(chunk);
    },
    flush(controller) {
      if (declaredBytes !== undefined && read !== declaredBytes) {
        controller.error(new MediaCopyError(`Source ${where} ended after ${read} of ${declaredBytes} bytes`));
      }
    },
  });
  return {
    contentType,
    declaredBytes,
    body: prepend(prefix, reader).pipeThrough(counter),
    bytesRead: () => read,
  };
}

interface CheckedResponse {
  message: IncomingMessage;
  /** Origin and path of the URL that answered, for messages. */
  where: string;
}

/** GETs the URL, following redirects by hand; every hop's URL and address are checked first. */
async function fetchChecked(
  sourceUrl: string,
  signal: AbortSignal,
  options: OpenSourceOptions,
): Promise<CheckedResponse> {
  let url: URL;
  try {
    url = new URL(sourceUrl);
  } catch {
    throw new MediaCopyError('Source URL is not a URL');
  }
  for (let hop = 0; ; hop++) {
    const where = describeUrl(url);
    const refused = refuseUrl(url, options.policy);
    if (refused) throw new MediaCopyError(`Source ${where} refused: ${refused}`);
    const pinned = isTrustedOrigin(url, options.policy) ? undefined : await checkedAddress(url, options, where);
    let message: IncomingMessage;
    try {
      message = await get(url, pinned, signal);
    } catch (error) {
      throw new MediaCopyError(
        signal.aborted ? `Source ${where} did not answer in time` : `Source ${where} unreachable`,
        { cause: error },
      );
    }
    const status = message.statusCode ?? 0;
    const location = message.headers.location;
    if (status < 300 || status > 399 || status === 304 || location === undefined) return { message, where };
    message.destroy();
    if (hop >= MAX_REDIRECTS) throw new MediaCopyError(`Source ${where} redirected more than ${MAX_REDIRECTS} times`);
    try {
      url = new URL(location, url);
    } catch {
      throw new MediaCopyError(`Source ${where} redirected to an invalid URL`);
    }
  }
}

/** Resolves the URL's host and returns the checked address to connect to (`public-address.ts`). */
async function checkedAddress(url: URL, options: OpenSourceOptions, where: string): Promise<PinnedAddress> {
  const checked = await resolvePublicAddress(url, options.resolve);
  if ('pinned' in checked) return checked.pinned;
  if ('refused' in checked) throw new MediaCopyError(`Source ${where} refused: ${checked.refused}`);
  throw new MediaCopyError(`Source ${where} unreachable: ${checked.unreachable}`, { cause: checked.cause });
}

/** One GET; with `pinned`, the socket connects to that address whatever DNS says by then. */
function get(url: URL, pinned: PinnedAddress | undefined, signal: AbortSignal): Promise<IncomingMessage> {
  const requestOptions: RequestOptions = {
    method: 'GET',
    protocol: url.protocol,
    // The host name stays the TLS server name and the Host header; only the address is pinned.
    hostname: bareHost(url),
    port: url.port || undefined,
    path: `${url.pathname}${url.search}`,
    // identity: a compressed transfer would make Content-Length describe other bytes than the body.
    headers: { 'accept-encoding': 'identity', accept: 'image/*, video/*' },
    signal,
  };
  if (pinned) requestOptions.lookup = pinnedLookup(pinned);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(requestOptions, resolve);
    req.once('error', reject);
    req.end();
  });
}

/** Reads until at least `count` bytes (or the end) have arrived. */
async function readPrefix(reader: ReadableStreamDefaultReader<Uint8Array>, count: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  while (length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    length += value.byteLength;
  }
  return Buffer.concat(chunks);
}

/** The stream of `prefix` followed by the rest of `reader`. */
function prepend(prefix: Uint8Array, reader: ReadableStreamDefaultReader<Uint8Array>): ReadableStream<Uint8Array> {
  let sentPrefix = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sentPrefix) {
        sentPrefix = true;
        if (prefix.byteLength > 0) {
          controller.enqueue(prefix);
          return;
        }
      }
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/**
 * The allowed type of `kind` whose signature the first bytes carry, if any. MP4 and QuickTime share
 * the ISO base media box layout; the `ftyp` brand `qt  ` tells QuickTime apart.
 */
export function sniffType(bytes: Uint8Array, kind: TaskType): string | undefined {
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString('latin1');
  const startsWith = (signature: number[]) => signature.every((byte, index) => bytes[index] === byte);
  if (kind === 'image') {
    if (startsWith([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
    if (startsWith([0xff, 0xd8, 0xff])) return 'image/jpeg';
    if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
    return undefined;
  }
  if (startsWith([0x1a, 0x45, 0xdf, 0xa3])) return 'video/webm';
  const box = ascii(4, 8);
  if (box === 'ftyp') return ascii(8, 12) === 'qt  ' ? 'video/quicktime' : 'video/mp4';
  if (['moov', 'mdat', 'wide', 'free', 'skip', 'pnot'].includes(box)) return 'video/quicktime';
  return undefined;
}

/** Normalises any failure of a copy into a `MediaCopyError`, keeping the first meaningful cause. */
export function asCopyError(error: unknown, fallback: string, signal: AbortSignal): MediaCopyError {
  if (error instanceof MediaCopyError) return error;
  const inner = findCopyError(error);
  if (inner) return inner;
  if (signal.aborted) return new MediaCopyError(`${fallback}: timed out`, { cause: error });
  return new MediaCopyError(fallback, { cause: error });
}

function findCopyError(error: unknown): MediaCopyError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof MediaCopyError) return current;
    current = current.cause;
  }
  return undefined;
}

function normaliseType(header: string | undefined): string {
  const type = (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return TYPE_ALIASES[type] ?? type;
}

function parseLength(header: string | undefined): number | undefined {
  if (header === undefined || !/^\d+$/.test(header.trim())) return undefined;
  const value = Number(header.trim());
  return Number.isSafeInteger(value) ? value : undefined;
}

/** Origin and path only: provider result URLs may carry access tokens in their query. */
function describeUrl(url: URL): string {
  return `${url.origin}${url.pathname}`.slice(0, 300);
}
