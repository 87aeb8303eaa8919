/**
 * One webhook endpoint (`#/webhooks/<id>?state=&eventType=&cursor=`): what it is, a test event, a new
 * signing secret (shown once; the previous one keeps signing for the chosen grace), the form that
 * changes it, deleting it after a confirmation, and its delivery log newest first, filtered by state
 * and event type, each delivery with its attempts and a Redeliver button. While a delivery of the page
 * is being sent the log reads itself again every few seconds.
 */
import {
  ApiError,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookDeliveries,
  redeliverWebhook,
  rotateWebhookSecret,
  testWebhookEndpoint,
  updateWebhookEndpoint,
  type WebhookDelivery,
  type WebhookEndpoint,
} from '../api';
import { confirmDialog, secretPanel } from '../dialogs';
import { dataTable, field, h, replace, statusLine } from '../dom';
import { dateTime } from '../format';
import { descriptionField, eventsChoice, showEndpointFailure, urlField } from '../webhook-form';
import {
  attemptText,
  DELIVERY_STATES,
  deliveryStateDetail,
  deliveryStateName,
  endpointEventsText,
  TEST_EVENT_TYPE,
  WEBHOOK_EVENT_TYPES,
} from '../webhook-format';
import { type PageContext, POLL_INTERVAL_MS, pause } from './page';
import { announceOnWebhookList, SECRET_WARNING, webhookHash } from './webhooks';

const PAGE_SIZE = '20';

/** Grace periods offered on rotation (seconds); the API's default is a day. */
const GRACE_CHOICES: [number, string][] = [
  [0, 'None: the old secret stops now (for a leaked secret)'],
  [3600, '1 hour'],
  [86_400, '1 day'],
  [7 * 86_400, '7 days'],
];

/** The log's address with the filters and cursor that are set. */
function logHash(endpointId: string, filter: { state?: string; eventType?: string; cursor?: string }): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(filter)) if (value) search.set(name, value);
  const text = search.toString();
  return `${webhookHash(endpointId)}${text ? `?${text}` : ''}`;
}

/** The endpoint's facts as a description list. */
function endpointDetails(endpoint: WebhookEndpoint): HTMLElement {
  const rows: [string, string][] = [
    ['URL', endpoint.url],
    ['Description', endpoint.description || '—'],
    ['Events', endpointEventsText(endpoint.events)],
    ['State', endpoint.enabled ? 'Enabled' : 'Disabled: receives no new events'],
    ['Secret created', dateTime(endpoint.secretCreatedAt)],
  ];
  if (endpoint.previousSecretExpiresAt) {
    rows.push(['Previous secret signs until', dateTime(endpoint.previousSecretExpiresAt)]);
  }
  return h(
    'dl',
    { class: 'details endpoint-details' },
    ...rows.flatMap(([term, value]) => [h('dt', {}, term), h('dd', { 'data-term': term }, value)]),
  );
}

export async function renderWebhook(main: HTMLElement, endpointId: string, context: PageContext): Promise<void> {
  context.setTitle('Webhook endpoint');
  const stateFilter = context.params.get('state') ?? '';
  const typeFilter = context.params.get('eventType') ?? '';
  const cursor = context.params.get('cursor') ?? '';

  let endpoint: WebhookEndpoint;
  try {
    endpoint = await getWebhookEndpoint(endpointId);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    replace(
      main,
      h('h1', { tabindex: -1 }, 'Webhook endpoint not found'),
      h('p', {}, 'This account has no endpoint of this id (it may have been deleted).'),
      h('p', {}, h('a', { href: '#/webhooks' }, 'All endpoints')),
    );
    return;
  }
  if (!context.alive()) return;

  const notice = statusLine();
  const secretSlot = h('div', {});
  const detailsSlot = h('div', {});

  // The form that changes the endpoint.
  const url = urlField(endpoint.url);
  const description = descriptionField(endpoint.description ?? '');
  const events = eventsChoice(endpoint.events);
  const enabled = h('input', { type: 'checkbox', name: 'enabled', id: 'endpoint-enabled' });
  const formError = h('p', { class: 'field-error', role: 'alert', hidden: true });
  const save = h('button', { type: 'submit' }, 'Save changes');
  const form = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'change-endpoint-title',
      novalidate: true,
      onsubmit: (event: Event) => {
        event.preventDefault();
        void change();
      },
    },
    h('h2', { id: 'change-endpoint-title' }, 'Change this endpoint'),
    url.element,
    description.element,
    events.element,
    h(
      'div',
      { class: 'field' },
      h('label', { class: 'radio', for: enabled.id }, enabled, ' Enabled (a disabled endpoint receives no new events)'),
    ),
    formError,
    save,
  );

  const show = (current: WebhookEndpoint) => {
    endpoint = current;
    replace(detailsSlot, endpointDetails(current));
    url.control.value = current.url;
    description.control.value = current.description ?? '';
    events.reset(current.events);
    enabled.checked = current.enabled;
  };

  const change = async () => {
    for (const one of [url, description, events]) one.setError(undefined);
    formError.hidden = true;
    const chosen = events.read();
    if (chosen === undefined) return;
    save.disabled = true;
    try {
      const changed = await updateWebhookEndpoint(endpoint.id, {
        url: url.control.value.trim(),
        description: description.control.value.trim(),
        events: chosen,
        enabled: enabled.checked,
      });
      if (!context.alive()) return;
      show(changed);
      notice.textContent = 'Changes saved.';
    } catch (failure) {
      showEndpointFailure(failure, form, { url, description, events }, formError);
    } finally {
      save.disabled = false;
    }
  };

  const rotate = () => {
    const grace = field(
      'Old secret keeps signing for',
      h(
        'select',
        {},
        ...GRACE_CHOICES.map(([seconds, label]) =>
          h('option', { value: seconds, selected: seconds === 86_400 }, label),
        ),
      ),
    );
    confirmDialog(
      'Rotate the signing secret?',
      [
        h(
          'p',
          {},
          'A new secret signs every delivery from now on. During the grace each delivery carries both signatures, ',
          'so your receiver accepts it with either secret while you switch it to the new one.',
        ),
        grace.element,
      ],
      'Rotate',
      async () => {
        const rotated = await rotateWebhookSecret(endpoint.id, Number(grace.control.value));
        if (!context.alive()) return;
        show(rotated);
        notice.textContent = 'Signing secret rotated.';
        const panel = secretPanel(
          rotated.secret,
          {
            title: 'New signing secret',
            label: 'Signing secret',
            warning: SECRET_WARNING,
            notes: [
              h(
                'p',
                { class: 'grace' },
                rotated.previousSecretExpiresAt
                  ? `The previous secret stays valid until ${dateTime(rotated.previousSecretExpiresAt)}: until then every delivery carries both signatures. Switch your receiver to the new secret before then.`
                  : 'The previous secret has stopped signing: deliveries carry only the new signature.',
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
      },
    );
  };

  const remove = () => {
    confirmDialog(
      `Delete the endpoint ${endpoint.url}?`,
      [
        h(
          'p',
          {},
          'It receives no more events, and deliveries still open end unsent. Your receiver keeps what it has; ',
          'this cannot be undone.',
        ),
      ],
      'Delete',
      async () => {
        await deleteWebhookEndpoint(endpoint.id);
        announceOnWebhookList(`Endpoint ${endpoint.url} deleted.`);
        location.hash = '#/webhooks';
      },
    );
  };

  // The delivery log.
  const stateSelect = h(
    'select',
    { name: 'state' },
    h('option', { value: '' }, 'Any'),
    ...DELIVERY_STATES.map(({ state, meaning }) =>
      h('option', { value: state, selected: state === stateFilter }, meaning),
    ),
  );
  const typeSelect = h(
    'select',
    { name: 'eventType' },
    h('option', { value: '' }, 'Any'),
    ...[TEST_EVENT_TYPE, ...WEBHOOK_EVENT_TYPES.map(({ type }) => type)].map((type) =>
      h('option', { value: type, selected: type === typeFilter }, type),
    ),
  );
  const filters = h(
    'form',
    {
      class: 'filters',
      'aria-label': 'Filter deliveries',
      onsubmit: (event: Event) => {
        event.preventDefault();
        location.hash = logHash(endpoint.id, { state: stateSelect.value, eventType: typeSelect.value });
      },
    },
    field('State', stateSelect).element,
    field('Event type', typeSelect).element,
    h('button', { type: 'submit' }, 'Apply'),
  );
  const logStatus = statusLine();
  const logSlot = h('div', { class: 'table-wrap', id: 'delivery-log' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Delivery log pages' });
  let shown: WebhookDelivery[] = [];
  let watching = false;

  const redeliver = async (delivery: WebhookDelivery, button: HTMLButtonElement) => {
    button.disabled = true;
    try {
      await redeliverWebhook(endpoint.id, delivery.id);
      notice.textContent = `Redelivery of ${delivery.eventId} started: a new attempt with the same webhook-id.`;
      await refreshLog();
    } catch (failure) {
      button.disabled = false;
      notice.textContent = `Not redelivered: ${(failure as Error).message}`;
    }
  };

  const deliveryTable = (deliveries: WebhookDelivery[]) =>
    dataTable(
      'Deliveries of this endpoint, newest first',
      ['Event', 'Happened', 'State', 'Attempts', 'Actions'],
      deliveries.map((delivery) => {
        const button = h(
          'button',
          { type: 'button', class: 'secondary', 'aria-label': `Redeliver ${delivery.eventType} ${delivery.eventId}` },
          'Redeliver',
        );
        button.addEventListener('click', () => void redeliver(delivery, button));
        const detail = deliveryStateDetail(delivery);
        return {
          attributes: {
            'data-delivery-id': delivery.id,
            'data-event-id': delivery.eventId,
            'data-state': delivery.state,
            'data-attempts': delivery.attempts.length,
          },
          cells: [
            h('td', { class: 'event' }, delivery.eventType, h('br', {}), h('code', {}, delivery.eventId)),
            dateTime(delivery.eventAt),
            h(
              'td',
              { class: `delivery-${delivery.state}` },
              deliveryStateName(delivery.state),
              detail ? ` (${detail})` : '',
            ),
            delivery.attempts.length === 0
              ? 'None'
              : h(
                  'ol',
                  { class: 'attempts' },
                  ...delivery.attempts.map((attempt) =>
                    h('li', { 'data-status': attempt.statusCode ?? '' }, attemptText(attempt)),
                  ),
                ),
            h('td', { class: 'actions' }, button),
          ],
        };
      }),
    );

  /** Reads the log again while one of its deliveries is being sent (its attempt's outcome comes later). */
  const watch = async () => {
    if (watching) return;
    watching = true;
    try {
      while (context.alive() && shown.some((delivery) => delivery.state === 'sending')) {
        await pause(POLL_INTERVAL_MS);
        if (context.alive()) await refreshLog();
      }
    } finally {
      watching = false;
    }
  };

  async function refreshLog(): Promise<void> {
    const page = await listWebhookDeliveries(endpoint.id, {
      state: stateFilter,
      eventType: typeFilter,
      cursor,
      limit: PAGE_SIZE,
    });
    if (!context.alive()) return;
    shown = page.deliveries;
    const filtered = stateFilter !== '' || typeFilter !== '';
    replace(
      logSlot,
      shown.length === 0
        ? h('p', {}, filtered ? 'No deliveries match these filters.' : 'No deliveries yet.')
        : deliveryTable(shown),
    );
    logStatus.textContent = `${shown.length} ${shown.length === 1 ? 'delivery' : 'deliveries'} shown${filtered ? ' (filtered)' : ''}.`;
    replace(
      pager,
      cursor ? h('a', { href: logHash(endpoint.id, { state: stateFilter, eventType: typeFilter }) }, 'Newest') : null,
      page.next
        ? h(
            'a',
            { href: logHash(endpoint.id, { state: stateFilter, eventType: typeFilter, cursor: page.next }) },
            'Older deliveries',
          )
        : null,
    );
    void watch();
  }

  const sendTest = async (button: HTMLButtonElement) => {
    button.disabled = true;
    try {
      const sent = await testWebhookEndpoint(endpoint.id);
      notice.textContent = `Test event ${sent.eventId} sent; its delivery shows in the log below.`;
      await refreshLog();
    } catch (failure) {
      notice.textContent = `No test event sent: ${(failure as Error).message}`;
    } finally {
      button.disabled = false;
    }
  };
  const testButton = h('button', { type: 'button' }, 'Send test event');
  testButton.addEventListener('click', () => void sendTest(testButton));

  show(endpoint);
  replace(
    main,
    h(
      'div',
      { class: 'title-row' },
      h('h1', { tabindex: -1 }, 'Webhook endpoint'),
      h('a', { class: 'button secondary', href: '#/webhooks' }, 'All endpoints'),
    ),
    notice,
    secretSlot,
    detailsSlot,
    h(
      'div',
      { class: 'endpoint-actions' },
      testButton,
      h('button', { type: 'button', class: 'secondary', onclick: rotate }, 'Rotate secret'),
      h('button', { type: 'button', class: 'danger', onclick: remove }, 'Delete endpoint'),
    ),
    h('h2', {}, 'Delivery log'),
    h('p', { class: 'hint' }, 'Deliveries are kept 30 days. Redeliver sends one again with the same webhook-id.'),
    filters,
    logStatus,
    logSlot,
    pager,
    form,
  );
  await refreshLog();
}
