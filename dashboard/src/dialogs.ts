/**
 * Two pieces the pages that hand out secrets share: the panel that shows a secret once (with a copy
 * button and the warning that it will not be shown again) and the confirmation dialog of an action.
 */
import { h, statusLine, uid } from './dom';

/** What a panel that shows a secret once says. */
export interface SecretPanelText {
  /** The panel's heading (`New signing secret`). */
  title: string;
  /** The label of the secret's field (`Signing secret`). */
  label: string;
  /** The warning, read out at once (`role="alert"`): it must say the secret will not be shown again. */
  warning: string;
  /** What the reader should know besides (an old secret's grace), or nothing. */
  notes?: Node[];
}

/**
 * A panel that shows `secret` once, in a read-only field with a Copy button; `onDone` runs when the
 * reader says they have saved it (the caller removes the panel: nothing keeps the secret after that).
 */
export function secretPanel(secret: string, text: SecretPanelText, onDone: () => void): HTMLElement {
  const inputId = uid('secret');
  const copied = statusLine('hint');
  const input = h('input', { id: inputId, class: 'secret', readonly: true, value: secret, spellcheck: 'false' });
  return h(
    'section',
    { class: 'issued', 'aria-labelledby': `${inputId}-title`, tabindex: -1 },
    h('h2', { id: `${inputId}-title` }, text.title),
    h('p', { class: 'warning', role: 'alert' }, text.warning),
    h('label', { for: inputId }, text.label),
    h(
      'div',
      { class: 'copy-row' },
      input,
      h(
        'button',
        {
          type: 'button',
          onclick: () => {
            input.select();
            navigator.clipboard.writeText(secret).then(
              () => {
                copied.textContent = 'Copied to the clipboard.';
              },
              () => {
                copied.textContent = 'Copying was refused by the browser; select the text and copy it by hand.';
              },
            );
          },
        },
        'Copy',
      ),
    ),
    copied,
    ...(text.notes ?? []),
    h('button', { type: 'button', class: 'secondary', onclick: onDone }, 'I have saved it'),
  );
}

/**
 * A modal dialog (the native one: focus stays inside, Escape closes it) that runs `onConfirm` when
 * confirmed and closes once it succeeds; a failure is shown inside it, worded by `failureText`.
 */
export function confirmDialog(
  title: string,
  body: Node[],
  confirmLabel: string,
  onConfirm: () => Promise<void>,
  failureText: (failure: unknown) => string = (failure) => (failure as Error).message,
): HTMLDialogElement {
  const titleId = uid('dialog');
  const error = h('p', { class: 'field-error', role: 'alert', hidden: true });
  const confirm = h('button', { type: 'submit', class: 'danger' }, confirmLabel);
  const element: HTMLDialogElement = h(
    'dialog',
    { 'aria-labelledby': titleId },
    h(
      'form',
      {
        method: 'dialog',
        onsubmit: (event: Event) => {
          event.preventDefault();
          // One run at a time: a second click while the first is under way would send the action twice.
          confirm.disabled = true;
          onConfirm().then(
            () => element.close(),
            (failure: unknown) => {
              confirm.disabled = false;
              error.textContent = failureText(failure);
              error.hidden = false;
            },
          );
        },
      },
      h('h2', { id: titleId }, title),
      ...body,
      error,
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'button', class: 'secondary', onclick: () => element.close() }, 'Cancel'),
        confirm,
      ),
    ),
  );
  element.addEventListener('close', () => element.remove());
  document.body.append(element);
  element.showModal();
  return element;
}
