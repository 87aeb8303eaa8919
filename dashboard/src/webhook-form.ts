/**
 * The parts of an endpoint's form the create and the change forms share: the URL and description
 * fields, the choice of event types (all of them, those to come included, or only those checked), and
 * the placing of the API's 400 answer next to the field it names.
 */
import { ApiError, type WebhookEndpoint, type WebhookEventType } from './api';
import { field, h, uid } from './dom';
import { WEBHOOK_EVENT_TYPES } from './webhook-format';

/** The choice of event types: `read()` is null for all, the checked ones, or undefined when none is checked. */
export interface EventsChoice {
  element: HTMLFieldSetElement;
  read(): WebhookEventType[] | null | undefined;
  setError(message: string | undefined): void;
  reset(events: WebhookEndpoint['events']): void;
}

/** A fieldset: "All event types" or "Only these" with a checkbox per type (enabled only for the latter). */
export function eventsChoice(events: WebhookEndpoint['events']): EventsChoice {
  const name = uid('events');
  const errorId = `${name}-error`;
  const error = h('p', { class: 'field-error', id: errorId, hidden: true });
  const all = h('input', { type: 'radio', name, value: 'all', id: `${name}-all` });
  const only = h('input', { type: 'radio', name, value: 'only', id: `${name}-only` });
  const boxes = WEBHOOK_EVENT_TYPES.map(({ type, meaning }) => ({
    type,
    box: h('input', { type: 'checkbox', name: `${name}-type`, value: type, id: `${name}-${type}` }),
    meaning,
  }));
  const sync = () => {
    for (const { box } of boxes) box.disabled = all.checked;
  };
  all.addEventListener('change', sync);
  only.addEventListener('change', sync);
  const element = h(
    'fieldset',
    { class: 'field events', 'aria-describedby': errorId },
    h('legend', {}, 'Events'),
    h('label', { class: 'radio', for: all.id }, all, ' All event types, including those added later'),
    h('label', { class: 'radio', for: only.id }, only, ' Only these:'),
    h(
      'ul',
      { class: 'event-types' },
      ...boxes.map(({ type, box, meaning }) =>
        h('li', {}, h('label', { for: box.id }, box, ' ', h('code', {}, type), ` (${meaning})`)),
      ),
    ),
    error,
  );
  const setError = (message: string | undefined) => {
    error.textContent = message ?? '';
    error.hidden = message === undefined;
    if (message === undefined) element.removeAttribute('aria-invalid');
    else element.setAttribute('aria-invalid', 'true');
  };
  const reset = (chosen: WebhookEndpoint['events']) => {
    all.checked = chosen === null;
    only.checked = chosen !== null;
    for (const { type, box } of boxes) box.checked = chosen?.includes(type) ?? false;
    sync();
  };
  reset(events);
  return {
    element,
    setError,
    reset,
    read() {
      if (all.checked) return null;
      const checked = boxes.filter(({ box }) => box.checked).map(({ type }) => type);
      if (checked.length > 0) return checked;
      setError('Check at least one event type, or choose all of them.');
      return undefined;
    },
  };
}

/** The URL field (https on a public host; the API judges it). */
export function urlField(value = ''): ReturnType<typeof field> {
  return field(
    'Endpoint URL',
    h('input', { name: 'url', type: 'url', required: true, autocomplete: 'off', spellcheck: 'false', value }),
    'https on a public host name, e.g. https://hooks.example.com/generation.',
  );
}

/** The description field (optional, up to 200 characters). */
export function descriptionField(value = ''): ReturnType<typeof field> {
  return field(
    'Description (optional)',
    h('input', { name: 'description', maxlength: 200, autocomplete: 'off', value }),
  );
}

/**
 * Shows a refused request: a 400's field errors next to their fields (`url`, `description`, `events`),
 * anything else in `formError`; focuses the first field marked invalid.
 */
export function showEndpointFailure(
  failure: unknown,
  form: HTMLFormElement,
  fields: { url: ReturnType<typeof field>; description: ReturnType<typeof field>; events: EventsChoice },
  formError: HTMLElement,
): void {
  const messages: string[] = [];
  if (failure instanceof ApiError && failure.status === 400) {
    for (const [path, texts] of Object.entries(failure.fieldErrors)) {
      const text = texts.join(' ');
      if (path === 'url') fields.url.setError(text);
      else if (path === 'description') fields.description.setError(text);
      else if (path === 'events') fields.events.setError(text);
      else messages.push(`${path}: ${text}`);
    }
    messages.push(...failure.formErrors);
  } else {
    messages.push((failure as Error).message);
  }
  formError.textContent = messages.join(' ');
  formError.hidden = messages.length === 0;
  form.querySelector<HTMLElement>('input[aria-invalid="true"], [aria-invalid="true"] input:not([disabled])')?.focus();
}
