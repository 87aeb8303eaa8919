/**
 * Tasks: the caller's tasks newest first, filtered by status and type, one page at a time (the cursor
 * rides in the address, so Back returns to the page before). While a task on the page is pending the
 * page reads the list again every few seconds; a queued task says how many of the account's tasks are
 * ahead of it (read from the task itself: a listing has only the stage) and can be cancelled; completed
 * image tasks show their first image.
 */
import { ApiError, cancelTask, getTask, listTasks, type Task, type TaskSummary } from '../api';
import { dataTable, field, h, replace, statusLine, type TableRow } from '../dom';
import { credits, dateTime, stateName, statusName } from '../format';
import { type PageContext, POLL_INTERVAL_MS, pause } from './page';

const PAGE_SIZE = '20';

/** `#/tasks?...` with the filters and cursor that are set. */
function tasksHash(filter: { status?: string; type?: string; cursor?: string }): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(filter)) if (value) search.set(name, value);
  const text = search.toString();
  return `#/tasks${text ? `?${text}` : ''}`;
}

/** The first image of a completed image task, small, linking to its task. */
async function thumbnail(task: TaskSummary): Promise<HTMLElement | undefined> {
  const full = await getTask(task.taskId);
  if (full.status !== 1 || !full.imageUrls?.[0]) return undefined;
  return h('img', { class: 'thumb', src: full.imageUrls[0], alt: `First image of task ${task.taskId}` });
}

/** The state column: where a pending task stands, or how it ended. */
function stateCell(task: { status: number; stage?: string; queuedAhead?: number; errorCode?: string }): string {
  return `${stateName(task)}${task.errorCode ? ` (${task.errorCode})` : ''}`;
}

function costText(task: { creditsUsed: number; creditsRefunded: boolean }): string {
  return `${credits(task.creditsUsed)}${task.creditsRefunded ? ' (refunded)' : ''}`;
}

/** Shows a row as `task` is now (after a cancel): its state and cost cells and its data attributes. */
function showState(row: HTMLTableRowElement, task: Task): void {
  row.dataset.status = String(task.status);
  delete row.dataset.stage;
  const [state, cost] = [row.querySelector<HTMLElement>('td.state'), row.cells[4]];
  if (state) {
    state.className = `state state-${task.status}`;
    state.textContent = stateCell({ ...task, errorCode: 'errorCode' in task ? task.errorCode : undefined });
  }
  if (cost) cost.textContent = costText(task);
}

export async function renderTasks(main: HTMLElement, context: PageContext): Promise<void> {
  context.setTitle('Tasks');
  const status = context.params.get('status') ?? '';
  const type = context.params.get('type') ?? '';
  const cursor = context.params.get('cursor') ?? '';

  const statusSelect = h(
    'select',
    { name: 'status' },
    h('option', { value: '' }, 'Any'),
    ...[0, 1, 2].map((value) => h('option', { value, selected: String(value) === status }, statusName(value))),
  );
  const typeSelect = h(
    'select',
    { name: 'type' },
    h('option', { value: '' }, 'Any'),
    h('option', { value: 'image', selected: type === 'image' }, 'Image'),
    h('option', { value: 'video', selected: type === 'video' }, 'Video'),
  );
  const filters = h(
    'form',
    {
      class: 'filters',
      'aria-label': 'Filter tasks',
      onsubmit: (event: Event) => {
        event.preventDefault();
        location.hash = tasksHash({ status: statusSelect.value, type: typeSelect.value });
      },
    },
    field('Status', statusSelect).element,
    field('Type', typeSelect).element,
    h('button', { type: 'submit' }, 'Apply'),
  );
  const status_ = statusLine();
  /** What a cancel did (kept while the list reads itself again). */
  const notice = statusLine();
  const table = h('div', { class: 'table-wrap' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  replace(
    main,
    h(
      'div',
      { class: 'title-row' },
      h('h1', { tabindex: -1 }, 'Tasks'),
      h('a', { class: 'button', href: '#/new' }, 'New task'),
    ),
    filters,
    status_,
    notice,
    table,
    pager,
  );

  /** Cancels a queued task from its row, then shows the row as the answer has it (failed, refunded). */
  const cancel = async (task: TaskSummary, row: HTMLTableRowElement, button: HTMLButtonElement) => {
    button.disabled = true;
    try {
      const cancelled = await cancelTask(task.taskId);
      showState(row, cancelled);
      button.remove();
      notice.textContent = `The task of ${dateTime(task.createdAt)} was cancelled; its credits were refunded.`;
      await context.refreshBalance();
    } catch (error) {
      button.disabled = false;
      const message = error instanceof ApiError ? error.message : 'The task could not be cancelled.';
      notice.textContent = `Not cancelled: ${message}`;
      if (error instanceof ApiError && error.status === 409) button.remove();
    }
  };

  const thumbs = new Map<string, HTMLElement>();
  for (;;) {
    const page = await listTasks({ status, type, cursor, limit: PAGE_SIZE });
    if (!context.alive()) return;
    if (page.tasks.length === 0) {
      replace(
        table,
        h('p', {}, cursor ? 'No more tasks.' : 'No tasks yet. ', !cursor && h('a', { href: '#/new' }, 'Start one.')),
      );
    } else {
      const rows = page.tasks.map((task) => {
        const preview = h('td', { class: 'preview' });
        const known = thumbs.get(task.taskId);
        if (known) preview.append(known);
        else if (task.type === 'image' && task.status === 1) {
          void thumbnail(task).then((image) => {
            if (!image) return;
            thumbs.set(task.taskId, image);
            preview.append(image);
          });
        }
        const queued = task.status === 0 && task.stage === 'queued';
        const state = h('td', { class: `state state-${task.status}` }, stateCell(task));
        const cost = h('td', {}, costText(task));
        const actions = h('td', { class: 'actions' });
        const row: TableRow = {
          attributes: { 'data-task-id': task.taskId, 'data-status': task.status, 'data-stage': task.stage },
          cells: [
            h('a', { href: `#/tasks/${encodeURIComponent(task.taskId)}` }, dateTime(task.createdAt)),
            task.type === 'image' ? 'Image' : 'Video',
            task.model,
            state,
            cost,
            preview,
            actions,
          ],
        };
        if (queued) {
          const button = h('button', {
            type: 'button',
            class: 'danger',
            'aria-label': `Cancel the task of ${dateTime(task.createdAt)}`,
          });
          button.textContent = 'Cancel';
          button.addEventListener('click', () => {
            const tr = button.closest('tr');
            if (tr) void cancel(task, tr, button);
          });
          actions.append(button);
          // How many are ahead: the listing has only the stage, the task itself has the count.
          void getTask(task.taskId).then(
            (full) => {
              if (full.status === 0 && 'queuedAhead' in full) state.textContent = stateName(full);
            },
            () => undefined,
          );
        }
        return row;
      });
      replace(
        table,
        dataTable(
          'Your tasks, newest first',
          ['Created', 'Type', 'Model', 'State', 'Cost', 'Preview', 'Actions'],
          rows,
        ),
      );
    }
    // Marks which query the rows answer, so a reader (a person's assistive tool, a test) can tell the
    // filtered list from the one it replaces.
    table.dataset.listFor = tasksHash({ status, type, cursor });
    replace(
      pager,
      cursor && h('a', { href: tasksHash({ status, type }) }, 'Newest'),
      page.next && h('a', { href: tasksHash({ status, type, cursor: page.next }), rel: 'next' }, 'Older'),
    );
    const pending = page.tasks.some((task) => task.status === 0);
    status_.textContent = pending ? 'Some tasks have not ended yet; this list updates by itself.' : '';
    if (!pending) return;
    await pause(POLL_INTERVAL_MS);
    if (!context.alive()) return;
  }
}
