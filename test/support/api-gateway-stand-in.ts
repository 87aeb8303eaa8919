/**
 * A stand-in for the parts of API Gateway's management API that usage-plan enrollment calls (API keys,
 * usage plans, plan keys), over real HTTP, so the SDK's own client is exercised with its real
 * serialization and error mapping. There is no usage-plan emulation in DynamoDB Local and no cloud
 * account here; the stand-in follows the documented rules the service relies on: an API key value is
 * unique (409 ConflictException), a key is in at most one plan per stage (409), lists come as `item`.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

interface StoredKey {
  id: string;
  name: string;
  value: string;
  enabled: boolean;
}
interface StoredPlan {
  id: string;
  name: string;
  apiStages: { apiId: string; stage: string }[];
  throttle?: { rateLimit?: number; burstLimit?: number };
  quota?: { limit?: number; period?: string };
  tags?: Record<string, string>;
  keyIds: Set<string>;
}

export interface ApiGatewayStandIn {
  endpoint: string;
  keys: Map<string, StoredKey>;
  plans: Map<string, StoredPlan>;
  /** Every request as `METHOD path`, in order. */
  calls: string[];
  /** The plan ids a key (by name) is in. */
  plansOf(name: string): string[];
  close(): Promise<void>;
}

const id = () => randomBytes(5).toString('hex');

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

function send(res: ServerResponse, status: number, value?: unknown, errorType?: string): void {
  res.writeHead(status, {
    'Content-Type': 'application/json',
    ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
  });
  res.end(value === undefined ? '' : JSON.stringify(value));
}

function planView(plan: StoredPlan) {
  const { keyIds: _keyIds, ...rest } = plan;
  return rest;
}

/** Starts the stand-in on a free loopback port, with one plan (`default`) for the stage. */
export async function startApiGatewayStandIn(): Promise<ApiGatewayStandIn> {
  const keys = new Map<string, StoredKey>();
  const plans = new Map<string, StoredPlan>();
  const calls: string[] = [];
  plans.set('default', {
    id: 'default',
    name: 'stack-default',
    apiStages: [{ apiId: 'api', stage: 'prod' }],
    keyIds: new Set(),
  });

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const path = url.pathname;
    calls.push(`${req.method} ${path}`);
    const parts = path.split('/').filter(Boolean);
    void (async () => {
      const input = req.method === 'POST' || req.method === 'PATCH' ? await body(req) : {};
      if (req.method === 'POST' && path === '/apikeys') {
        const value = String(input.value ?? '');
        if ([...keys.values()].some((key) => key.value === value)) {
          return send(res, 409, { message: 'API Key already exists' }, 'ConflictException');
        }
        const key = { id: id(), name: String(input.name ?? ''), value, enabled: input.enabled === true };
        keys.set(key.id, key);
        return send(res, 201, { id: key.id, name: key.name, enabled: key.enabled });
      }
      if (req.method === 'GET' && path === '/apikeys') {
        const prefix = url.searchParams.get('name') ?? '';
        const item = [...keys.values()]
          .filter((key) => key.name.startsWith(prefix))
          .map(({ value: _v, ...key }) => key);
        return send(res, 200, { item });
      }
      if (req.method === 'GET' && path === '/usageplans') {
        return send(res, 200, { item: [...plans.values()].map(planView) });
      }
      if (req.method === 'POST' && path === '/usageplans') {
        const plan: StoredPlan = {
          id: id(),
          name: String(input.name ?? ''),
          apiStages: (input.apiStages as StoredPlan['apiStages']) ?? [],
          throttle: input.throttle as StoredPlan['throttle'],
          quota: input.quota as StoredPlan['quota'],
          tags: input.tags as StoredPlan['tags'],
          keyIds: new Set(),
        };
        plans.set(plan.id, plan);
        return send(res, 201, planView(plan));
      }
      const plan = parts[0] === 'usageplans' && parts[1] ? plans.get(parts[1]) : undefined;
      if (!plan) return send(res, 404, { message: 'Invalid Usage Plan ID specified' }, 'NotFoundException');
      if (parts.length === 2 && req.method === 'PATCH') {
        for (const op of (input.patchOperations as { op: string; path: string; value?: string }[]) ?? []) {
          const [, group, field] = op.path.split('/');
          if (op.op === 'remove' && group === 'quota') plan.quota = undefined;
          if (op.op === 'replace' && (group === 'throttle' || group === 'quota') && field) {
            const target: Record<string, unknown> = { ...plan[group] };
            target[field] = field === 'period' ? op.value : Number(op.value);
            plan[group] = target;
          }
        }
        return send(res, 200, planView(plan));
      }
      if (parts.length === 2 && req.method === 'DELETE') {
        if (plan.keyIds.size > 0) return send(res, 400, { message: 'plan has keys' }, 'BadRequestException');
        plans.delete(plan.id);
        return send(res, 202);
      }
      if (parts[2] === 'keys' && parts.length === 3 && req.method === 'POST') {
        const keyId = String(input.keyId ?? '');
        const key = keys.get(keyId);
        if (!key) return send(res, 404, { message: 'Invalid API Key identifier specified' }, 'NotFoundException');
        const stages = new Set(plan.apiStages.map((s) => `${s.apiId}/${s.stage}`));
        const elsewhere = [...plans.values()].some(
          (other) => other.keyIds.has(keyId) && other.apiStages.some((s) => stages.has(`${s.apiId}/${s.stage}`)),
        );
        if (elsewhere) return send(res, 409, { message: 'key already in a plan for this stage' }, 'ConflictException');
        plan.keyIds.add(keyId);
        return send(res, 201, { id: keyId, type: 'API_KEY', name: key.name });
      }
      if (parts[2] === 'keys' && parts.length === 3 && req.method === 'GET') {
        const item = [...plan.keyIds].map((keyId) => ({ id: keyId, type: 'API_KEY', name: keys.get(keyId)?.name }));
        return send(res, 200, { item });
      }
      if (parts[2] === 'keys' && parts[3] && req.method === 'DELETE') {
        if (!plan.keyIds.delete(parts[3])) return send(res, 404, { message: 'not in plan' }, 'NotFoundException');
        return send(res, 202);
      }
      return send(res, 404, { message: `no route ${req.method} ${path}` }, 'NotFoundException');
    })().catch((error: unknown) => send(res, 500, { message: String(error) }));
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', () => ready()));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('stand-in has no port');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    keys,
    plans,
    calls,
    plansOf(name) {
      const key = [...keys.values()].find((k) => k.name === name);
      return key ? [...plans.values()].filter((p) => p.keyIds.has(key.id)).map((p) => p.id) : [];
    },
    close: () => new Promise<void>((closed) => server.close(() => closed())),
  };
}
