/**
 * One task: prompt, model, cost, state (a queued task with the tasks ahead of it, and a Cancel button),
 * the error text of a failure, and the results (image previews, a playable video) with download links. A
 * pending task is read again every few seconds until it ends; then the balance is refreshed (a failure
 * refunds).
 */
import { ApiError, cancelTask, deleteTask, getTask, type Task } from '../api';
import { h, replace, statusLine } from '../dom';
import { credits, dateTime, stateName } from '../format';
import type { PageContext } from './page';

/** How long each read of a pending task waits on the service for its end (`?wait=`, at most 20). */
const TASK_WAIT_SECONDS = 20;

function row(term: string, ...value: (Node | string)[]): HTMLElement[] {
  return [h('dt', {}, term), h('dd', {}, ...value)];
}

function results(task: Task): HTMLElement | undefined {
  if (task.status !== 1) return undefined;
  if (task.type === 'image') {
    const urls = task.imageUrls ?? [];
    if (urls.length === 0) return h('p', {}, 'The results have expired and were deleted.');
    return h(
      'ul',
      { class: 'results' },
      ...urls.map((url, index) =>
        h(
          'li',
          {},
          h('img', { src: url, alt: `Result image ${index + 1} of ${urls.length}` }),
          h('a', { href: url, download: '' }, `Download image ${index + 1}`),
        ),
      ),
    );
  }
  if (!task.videoUrl) return h('p', {}, 'The result has expired and was deleted.');
  return h(
    'div',
    { class: 'results' },
    h('video', { src: task.videoUrl, controls: true, preload: 'metadata', 'aria-label': 'Result video' }),
    h('a', { href: task.videoUrl, download: '' }, 'Download video'),
  );
}

function details(task: Task, cancel?: HTMLButtonElement): HTMLElement {
  const state = h(
    'span',
    {
      class: `state state-${task.status}`,
      'data-status': task.status,
      'data-stage': task.status === 0 ? task.stage : undefined,
    },
    stateName(task),
  );
  return h(
    'div',
    {},
    h(
      'dl',
      { class: 'details' },
      ...row('State', state, ...(cancel ? [' ', cancel] : [])),
      ...row('Type', task.type === 'image' ? 'Image' : 'Video'),
      ...row('Model', task.model),
      ...row('Cost', credits(task.creditsUsed), task.creditsRefunded ? ' (refunded)' : ''),
      ...row('Created', dateTime(task.createdAt)),
      ...row('Updated', dateTime(task.updatedAt)),
      ...(task.status === 1 && task.resultsExpireAt ? row('Results kept until', dateTime(task.resultsExpireAt)) : []),
      ...row('Prompt', h('span', { class: 'prompt' }, task.prompt)),
      ...(task.status === 2
        ? row(
            'Error',
            h(
              'span',
              { class: 'error-text' },
              `${task.errorCode}: ${task.errorMessage}`,
              task.providerErrorCode ? ` (provider code ${task.providerErrorCode})` : '',
            ),
          )
        : []),
    ),
    results(task),
  );
}

export async function renderTask(main: HTMLElement, taskId: string, context: PageContext): Promise<void> {
  context.setTitle(`Task ${taskId}`);
  const progress = statusLine();
  const body = h('div', {});
  replace(
    main,
    h('p', {}, h('a', { href: '#/tasks' }, 'All tasks')),
    h('h1', { tabindex: -1 }, 'Task ', h('code', {}, taskId)),
    progress,
    body,
  );
  const ended = async (task: Task) => {
    progress.textContent =
      task.status === 1
        ? 'The task has completed.'
        : 'errorCode' in task && task.errorCode === 'CANCELLED'
          ? 'The task was cancelled; its credits were refunded.'
          : 'The task failed; its credits were refunded.';
    await context.refreshBalance();
    body.append(deleteButton());
  };
  /** Delete, offered once the task has ended (a pending one must be cancelled first: the API says 409). */
  const deleteButton = () => {
    const button = h('button', { type: 'button', class: 'danger' }, 'Delete task');
    button.addEventListener('click', async () => {
      if (!window.confirm('Delete this task and its results? Its ledger entries are kept.')) return;
      button.disabled = true;
      try {
        await deleteTask(taskId);
        replace(body, h('p', { class: 'notice' }, 'The task and its results were deleted.'));
        progress.textContent = 'Deleted.';
      } catch (error) {
        button.disabled = false;
        progress.textContent = `Not deleted: ${error instanceof ApiError ? error.message : 'no answer'}`;
      }
    });
    return h('p', {}, button);
  };
  /** Set once a cancel answered: the page shows that answer and stops reading the task. */
  let cancelled: Task | undefined;
  const cancelButton = () => {
    const button = h('button', { type: 'button', class: 'danger' }, 'Cancel');
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        cancelled = await cancelTask(taskId);
        replace(body, details(cancelled));
        await ended(cancelled);
      } catch (error) {
        button.disabled = false;
        progress.textContent = `Not cancelled: ${error instanceof ApiError ? error.message : 'no answer'}`;
        if (error instanceof ApiError && error.status === 409) button.remove();
      }
    });
    return button;
  };
  // The first read answers at once; each later one is held by the service until the task ends (or 20 s
  // pass, then it shows the task as it is and asks again): the result shows within about a second of the
  // end, with no polling interval.
  for (let waitSeconds: number | undefined; ; waitSeconds = TASK_WAIT_SECONDS) {
    const task = await getTask(taskId, waitSeconds);
    if (!context.alive() || cancelled) return;
    const queued = task.status === 0 && task.stage === 'queued';
    replace(body, details(task, queued ? cancelButton() : undefined));
    if (queued) body.append(h('p', { class: 'hint' }, 'To delete this task, cancel it first.'));
    if (task.status !== 0) {
      await ended(task);
      return;
    }
    const startsAt =
      'estimatedStartAt' in task && task.estimatedStartAt
        ? ` (expected to start ${dateTime(task.estimatedStartAt)})`
        : '';
    progress.textContent =
      task.stage === 'queued'
        ? `Queued${startsAt}: it goes to the provider after the tasks ahead of it; the result shows here when it ends.`
        : 'Running: the result shows here when it ends.';
  }
}
