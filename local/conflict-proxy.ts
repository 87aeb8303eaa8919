/**
 * A conflict-faithful layer in front of DynamoDB Local.
 *
 * DynamoDB Local runs every transaction under one table-wide lock, so it never reports a transaction
 * conflict; the real service does, per item. This HTTP proxy forwards every request to DynamoDB Local
 * unchanged, and in front of that models the per-item rules of the real service:
 *
 * - A `TransactWriteItems` holds every item it names (Put, Update, Delete and ConditionCheck alike) for
 *   `holdMs` (or until DynamoDB Local has answered, whichever is later); its answer is sent when the
 *   hold ends, as the real service answers after the commit.
 * - A `TransactWriteItems` or `TransactGetItems` naming an item another transaction holds is refused
 *   with `TransactionCanceledException`, reason `TransactionConflict` for each held item and `None` for
 *   the others. Nothing of it is forwarded, so nothing is written.
 * - A `PutItem`, `UpdateItem` or `DeleteItem` on a held item is refused with
 *   `TransactionConflictException`.
 *
 * Not modelled (docs/design/money.md says so too): plain writes do not hold items (a transaction
 * never conflicts with an in-flight `PutItem`); `BatchWriteItem` and `BatchGetItem` pass through;
 * reads never conflict (as in DynamoDB, where non-transactional reads are not blocked); throttling,
 * partition limits and the 10-minute idempotency window of `ClientRequestToken`.
 */
import { randomUUID } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { TABLE } from '../functions/store/table';

export interface ConflictProxyOptions {
  /** DynamoDB Local's endpoint, e.g. `http://127.0.0.1:8000`. */
  target: string;
  /** How long a transaction holds its items (default 10 ms). */
  holdMs?: number;
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  host?: string;
  /** The key attributes of every table behind the proxy (default: the service's `PK`, `SK`). */
  keyAttributes?: readonly string[];
}

/** What the proxy refused so far, so tests can show that the layer really produced conflicts. */
export interface ConflictStats {
  /** Transactions cancelled with `TransactionConflict`. */
  cancelledTransactions: number;
  /** Plain writes refused with `TransactionConflictException`. */
  refusedWrites: number;
  /** Transactions forwarded (and holding their items). */
  forwardedTransactions: number;
}

export interface ConflictProxy {
  /** The endpoint clients use instead of DynamoDB Local's. */
  endpoint: string;
  stats(): ConflictStats;
  stop(): Promise<void>;
}

const TARGET_PREFIX = 'DynamoDB_20120810.';
const ERROR_PREFIX = 'com.amazonaws.dynamodb.v20120810#';
const CONFLICT_MESSAGE = 'Transaction is ongoing for the item';
const PLAIN_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The identity of one item: table and key attribute values (in their wire form). */
function itemId(tableName: unknown, source: unknown, keyAttributes: readonly string[]): string | undefined {
  if (typeof tableName !== 'string' || !isObject(source)) return undefined;
  return JSON.stringify([tableName, ...keyAttributes.map((name) => source[name] ?? null)]);
}

/** The items a transaction names, in request order (undefined where the proxy cannot tell). */
function transactionItems(body: Json, operation: string, keyAttributes: readonly string[]): (string | undefined)[] {
  const entries = body.TransactItems;
  if (!Array.isArray(entries)) return [];
  return entries.map((entry: unknown) => {
    if (!isObject(entry)) return undefined;
    const action = Object.values(entry)[0];
    if (!isObject(action)) return undefined;
    if (operation === 'TransactWriteItems' && isObject(entry.Put)) {
      return itemId(entry.Put.TableName, entry.Put.Item, keyAttributes);
    }
    return itemId(action.TableName, action.Key, keyAttributes);
  });
}

function sendJson(res: ServerResponse, status: number, body: Json): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/x-amz-json-1.0',
    'Content-Length': Buffer.byteLength(payload),
    'x-amzn-RequestId': randomUUID(),
  });
  res.end(payload);
}

/** DynamoDB's answer to a transaction naming held items (shape as the real service sends it). */
export function transactionCanceledBody(conflicts: boolean[]): Json {
  const reasons = conflicts.map((conflict) =>
    conflict ? { Code: 'TransactionConflict', Message: CONFLICT_MESSAGE } : { Code: 'None' },
  );
  return {
    __type: `${ERROR_PREFIX}TransactionCanceledException`,
    CancellationReasons: reasons,
    Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons
      .map((reason) => reason.Code)
      .join(', ')}]`,
  };
}

/** DynamoDB's answer to a plain write on an item a transaction holds. */
export function transactionConflictBody(): Json {
  return { __type: `${ERROR_PREFIX}TransactionConflictException`, message: CONFLICT_MESSAGE };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the proxy on 127.0.0.1 (a free port unless one is given). */
export async function startConflictProxy(options: ConflictProxyOptions): Promise<ConflictProxy> {
  const target = new URL(options.target);
  const holdMs = options.holdMs ?? 10;
  const keyAttributes = options.keyAttributes ?? [TABLE.partitionKey, TABLE.sortKey];
  const held = new Set<string>();
  const stats: ConflictStats = { cancelledTransactions: 0, refusedWrites: 0, forwardedTransactions: 0 };

  /** Forwards the request as received and resolves with DynamoDB Local's full answer. */
  const forward = (req: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
      const upstream = httpRequest(
        {
          hostname: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: target.host },
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () =>
            resolve({ status: answer.statusCode ?? 500, headers: answer.headers, body: Buffer.concat(chunks) }),
          );
          answer.on('error', reject);
        },
      );
      upstream.on('error', reject);
      upstream.end(body);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const targetHeader = req.headers['x-amz-target'];
    const operation =
      typeof targetHeader === 'string' && targetHeader.startsWith(TARGET_PREFIX)
        ? targetHeader.slice(TARGET_PREFIX.length)
        : '';
    let parsed: Json = {};
    if (operation) {
      try {
        const value: unknown = JSON.parse(body.toString('utf8'));
        if (isObject(value)) parsed = value;
      } catch {
        // Not JSON: DynamoDB Local answers it with its own error.
      }
    }

    let holding: string[] = [];
    if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
      const items = transactionItems(parsed, operation, keyAttributes);
      const conflicts = items.map((id) => id !== undefined && held.has(id));
      if (conflicts.some(Boolean)) {
        stats.cancelledTransactions++;
        sendJson(res, 400, transactionCanceledBody(conflicts));
        return;
      }
      if (operation === 'TransactWriteItems') {
        holding = [...new Set(items.filter((id): id is string => id !== undefined))];
        for (const id of holding) held.add(id);
        stats.forwardedTransactions++;
      }
    } else if (PLAIN_WRITES.has(operation)) {
      const id = itemId(parsed.TableName, parsed.Key ?? parsed.Item, keyAttributes);
      if (id !== undefined && held.has(id)) {
        stats.refusedWrites++;
        sendJson(res, 400, transactionConflictBody());
        return;
      }
    }

    const started = Date.now();
    try {
      const answer = await forward(req, body);
      if (holding.length > 0) await sleep(Math.max(0, started + holdMs - Date.now()));
      const headers = { ...answer.headers };
      delete headers['transfer-encoding'];
      headers['content-length'] = String(answer.body.length);
      res.writeHead(answer.status, headers);
      res.end(answer.body);
    } finally {
      for (const id of holding) held.delete(id);
    }
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks)).catch((error: unknown) => {
        // DynamoDB Local unreachable: answer as a 500 from the service would, so the SDK retries.
        if (!res.headersSent) {
          sendJson(res, 500, { __type: `${ERROR_PREFIX}InternalServerError`, message: String(error) });
        } else {
          res.destroy();
        }
      });
    });
  });
  // Many SDK sockets at once: no per-server connection cap, keep-alive like DynamoDB's endpoint.
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    endpoint: `http://${options.host ?? '127.0.0.1'}:${address.port}`,
    stats: () => ({ ...stats }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The switch of `npm start`: `DYNAMODB_CONFLICTS=on` and `DYNAMODB_CONFLICT_HOLD_MS` (default 10). */
export function conflictSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): { holdMs: number } | undefined {
  const switchValue = (env.DYNAMODB_CONFLICTS ?? '').toLowerCase();
  if (switchValue === '' || switchValue === 'off' || switchValue === 'false' || switchValue === '0') return undefined;
  if (switchValue !== 'on' && switchValue !== 'true' && switchValue !== '1') {
    throw new Error(`DYNAMODB_CONFLICTS must be on or off, got "${env.DYNAMODB_CONFLICTS}"`);
  }
  const raw = env.DYNAMODB_CONFLICT_HOLD_MS;
  const holdMs = raw === undefined || raw === '' ? 10 : Number(raw);
  if (!Number.isInteger(holdMs) || holdMs < 0) {
    throw new Error(`DYNAMODB_CONFLICT_HOLD_MS must be a whole number >= 0, got "${raw}"`);
  }
  return { holdMs };
}
