/**
 * Tasks: the caller's tasks newest first, filtered by status and type, one page at a time (the cursor
 * rides in the address, so Back returns to the page before). While a task on the page is pending the
 * page reads the list again every few seconds; completed image tasks show their first image.
 */
import { getTask, listTasks, type TaskSummary } from '../api';
import { dataTable, field, h, replace, statusLine, type TableRow } from '../dom';
import { credits, dateTime, statusName } from '../format';
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
    table,
    pager,
  );

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
        const row: TableRow = {
          attributes: { 'data-task-id': task.taskId, 'data-status': task.status },
          cells: [
            h('a', { href: `#/tasks/${encodeURIComponent(task.taskId)}` }, dateTime(task.createdAt)),
            task.type === 'image' ? 'Image' : 'Video',
            task.model,
            h(
              'td',
              { class: `state state-${task.status}` },
              statusName(task.status),
              task.errorCode ? ` (${task.errorCode})` : '',
            ),
            `${credits(task.creditsUsed)}${task.creditsRefunded ? ' (refunded)' : ''}`,
            preview,
          ],
        };
        return row;
      });
      replace(
        table,
        dataTable('Your tasks, newest first', ['Created', 'Type', 'Model', 'State', 'Cost', 'Preview'], rows),
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
    status_.textContent = pending ? 'Some tasks are still running; this list updates by itself.' : '';
    if (!pending) return;
    await pause(POLL_INTERVAL_MS);
    if (!context.alive()) return;
  }
}
