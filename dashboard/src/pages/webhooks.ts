/**
 * Webhooks: the account's endpoints with their event types and whether they are enabled, and the form
 * that creates one. A new endpoint's signing secret is shown once, with a copy button; each endpoint's
 * page (pages/webhook.ts) changes, rotates, tests and deletes it and shows its delivery log.
 */
import { createWebhookEndpoint, listWebhookEndpoints, type WebhookEndpoint } from '../api';
import { secretPanel } from '../dialogs';
import { dataTable, h, replace, statusLine } from '../dom';
import { dateTime } from '../format';
import { descriptionField, eventsChoice, showEndpointFailure, urlField } from '../webhook-form';
import { endpointEventsText } from '../webhook-format';
import type { PageContext } from './page';

/** `#/webhooks/<id>`: an endpoint's page. */
export function webhookHash(endpointId: string): string {
  return `#/webhooks/${encodeURIComponent(endpointId)}`;
}

/** What the list says when it is shown next (an endpoint's page deleted one and came back here). */
let announcement: string | undefined;

/** Has the list say `message` the next time it is shown. */
export function announceOnWebhookList(message: string): void {
  announcement = message;
}

/** The warning beside a secret shown once. */
export const SECRET_WARNING =
  "Copy this signing secret now. You won't see it again: it is stored sealed and only used to sign deliveries.";

export async function renderWebhooks(main: HTMLElement, context: PageContext): Promise<void> {
  context.setTitle('Webhooks');
  const notice = statusLine();
  const secretSlot = h('div', {});
  const listSlot = h('div', { class: 'table-wrap' });
  notice.textContent = announcement ?? '';
  announcement = undefined;

  const refresh = async () => {
    const { endpoints } = await listWebhookEndpoints();
    if (!context.alive()) return;
    replace(listSlot, endpoints.length === 0 ? h('p', {}, 'No endpoints yet.') : endpointTable(endpoints));
  };

  const endpointTable = (endpoints: WebhookEndpoint[]) =>
    dataTable(
      'Your webhook endpoints',
      ['URL', 'Description', 'Events', 'State', 'Created', 'Actions'],
      endpoints.map((endpoint) => ({
        attributes: { 'data-endpoint-id': endpoint.id },
        cells: [
          h('code', { class: 'url' }, endpoint.url),
          endpoint.description || '—',
          h('td', { class: 'events' }, endpointEventsText(endpoint.events)),
          h(
            'td',
            { class: endpoint.enabled ? 'endpoint-enabled' : 'endpoint-disabled' },
            endpoint.enabled ? 'Enabled' : 'Disabled',
          ),
          dateTime(endpoint.createdAt),
          h(
            'td',
            { class: 'actions' },
            h(
              'a',
              { class: 'button secondary', href: webhookHash(endpoint.id), 'aria-label': `Open ${endpoint.url}` },
              'Open',
            ),
          ),
        ],
      })),
    );

  const url = urlField();
  const description = descriptionField();
  const events = eventsChoice(null);
  const formError = h('p', { class: 'field-error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit' }, 'Create endpoint');
  const form = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'create-endpoint-title',
      novalidate: true,
      onsubmit: (event: Event) => {
        event.preventDefault();
        void create();
      },
    },
    h('h2', { id: 'create-endpoint-title' }, 'Add an endpoint'),
    url.element,
    description.element,
    events.element,
    formError,
    submit,
  );

  const create = async () => {
    for (const one of [url, description, events]) one.setError(undefined);
    formError.hidden = true;
    const chosen = events.read();
    if (chosen === undefined) return;
    const text = description.control.value.trim();
    submit.disabled = true;
    try {
      const created = await createWebhookEndpoint({
        url: url.control.value.trim(),
        ...(chosen === null ? {} : { events: chosen }),
        ...(text === '' ? {} : { description: text }),
      });
      form.reset();
      events.reset(null);
      notice.textContent = `Endpoint ${created.url} created.`;
      const panel = secretPanel(
        created.secret,
        {
          title: `Signing secret of ${created.url}`,
          label: 'Signing secret',
          warning: SECRET_WARNING,
          notes: [
            h(
              'p',
              {},
              'Your receiver verifies every delivery with it (Standard Webhooks). ',
              h('a', { href: webhookHash(created.id) }, 'Send it a test event'),
              ' from the endpoint’s page.',
            ),
          ],
        },
        () => {
          replace(secretSlot);
          main.querySelector<HTMLElement>('h1')?.focus();
        },
      );
      replace(secretSlot, panel);
      panel.focus();
      await refresh();
    } catch (failure) {
      showEndpointFailure(failure, form, { url, description, events }, formError);
    } finally {
      submit.disabled = false;
    }
  };

  replace(
    main,
    h('h1', { tabindex: -1 }, 'Webhooks'),
    h(
      'p',
      {},
      'Endpoints receive the events they choose, signed with a secret of their own (Standard Webhooks). ',
      'Open one to send a test event, see its deliveries and redeliver them, rotate its secret or change it.',
    ),
    notice,
    secretSlot,
    listSlot,
    form,
  );
  await refresh();
}
