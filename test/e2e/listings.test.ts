/**
 * The endpoints around a task through the gateway: the caller's tasks, credits and the catalog; never
 * another user's data.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createApi, IMAGE_PATH } from './support/api';
import { loadTarget } from './support/target';

const target = loadTarget();
const api = createApi(target);
/** Requests only, no task followed: still room for a loaded machine's slow answers. */
const QUICK_TIMEOUT_MS = 60_000;

interface TaskList {
  tasks: { taskId: string; type: string; status: number; creditsUsed: number }[];
  next: string | null;
}
interface Credits {
  balance: number;
  entries: { kind: string; delta: number; taskId?: string }[];
  next: string | null;
}

describe('listings', () => {
  test(
    'a new task is first in GET /api/ai/tasks and its debit is in GET /api/ai/credits',
    async () => {
      // Prepare
      const mainKey = target.key('main').apiKey;
      const { taskId, creditsUsed } = await api.submit(IMAGE_PATH, {
        model: 'image-model-1',
        prompt: 'a listed lighthouse',
        providerInput: { mockDelayMs: 0 },
      });

      // Act
      const tasks = await api.request('/api/ai/tasks?limit=5&type=image', { apiKey: mainKey });
      const credits = await api.request('/api/ai/credits?limit=100', { apiKey: mainKey });

      // Assert
      expect(tasks.status).toBe(200);
      const listed = tasks.body as TaskList;
      expect(listed.tasks.map((task) => task.taskId)).toContain(taskId);
      expect(listed.tasks.length).toBeLessThanOrEqual(5);
      expect(credits.status).toBe(200);
      const ledger = credits.body as Credits;
      expect(ledger.entries).toContainEqual(expect.objectContaining({ kind: 'debit', delta: -creditsUsed, taskId }));
      expect(typeof ledger.balance).toBe('number');
    },
    QUICK_TIMEOUT_MS,
  );

  test(
    "another user's listing never shows the main user's tasks",
    async () => {
      // Prepare
      const { taskId } = await api.submit(IMAGE_PATH, { model: 'image-model-1', prompt: 'mine alone' });

      // Act
      const other = await api.request('/api/ai/tasks?limit=100', { apiKey: target.key('other').apiKey });

      // Assert
      expect(other.status).toBe(200);
      expect((other.body as TaskList).tasks.map((task) => task.taskId)).not.toContain(taskId);
    },
    QUICK_TIMEOUT_MS,
  );

  test(
    'GET /api/ai/models lists the catalog; listings without a key are 401',
    async () => {
      // Act
      const models = await api.request('/api/ai/models', { apiKey: target.key('main').apiKey });
      const anonymous = await api.request('/api/ai/tasks');

      // Assert
      expect(models.status).toBe(200);
      expect((models.body as { models: unknown[] }).models).toHaveLength(20);
      expect(anonymous.status).toBe(401);
    },
    QUICK_TIMEOUT_MS,
  );

  test(
    'a bad limit is a 400 naming it',
    async () => {
      // Act
      const answer = await api.request('/api/ai/credits?limit=1000', { apiKey: target.key('main').apiKey });

      // Assert
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({
        error: 'Invalid request',
        details: { fieldErrors: { limit: [expect.any(String)] }, formErrors: [] },
      });
    },
    QUICK_TIMEOUT_MS,
  );

  test(
    'GET /api/openapi.json serves the committed document without a key',
    async () => {
      // Act
      const answer = await api.request('/api/openapi.json');

      // Assert
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual(
        JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'openapi.json'), 'utf8')),
      );
    },
    QUICK_TIMEOUT_MS,
  );
});
