/**
 * The new-task form's reference image files: a file picker and a drop zone, each chosen file listed
 * with a preview, its size and its state. A file is checked as soon as it is chosen (its type, declared
 * and by its first bytes; how many the model takes) and uploaded straight away (`POST /api/ai/uploads`,
 * then the presigned POST to storage); a file with a problem says so on its own line and is never
 * uploaded nor submitted. The form submits the `upload://` references of the uploaded files.
 */
import { ApiError } from '../api';
import { h, replace, uid } from '../dom';
import {
  fileProblem,
  SNIFF_BYTES,
  StorageRefusedError,
  sizeText,
  UPLOAD_TYPES,
  type UploadType,
  uploadFile,
} from '../uploads';

type EntryState = 'checking' | 'too-many' | 'uploading' | 'ready' | 'error';

interface Entry {
  file: File;
  state: EntryState;
  /** The problem of an `error` entry (or `too-many`'s message). */
  message?: string;
  /** The upload's reference once `ready`. */
  reference?: string;
  /** Settles when the file's check, then its upload (if it is uploading), is done, whatever the outcome. */
  done: Promise<void>;
  /** A blob: URL of the preview, revoked when the entry goes. */
  preview: string;
  item: HTMLLIElement;
}

export interface ReferenceFiles {
  element: HTMLElement;
  /** Sets how many references the model takes and how many URL lines already use up. */
  setRoom(maxReferences: number, urlCount: number, modelId: string): void;
  /** Waits for uploads in progress; then the references to submit, or the files' problems. */
  references(): Promise<{ references: string[]; problems: string[] }>;
  /** Shows the service's refusal of the upload sent at `index` of the submitted references. */
  setSubmitError(index: number, message: string): boolean;
  readonly count: number;
}

function uploadFailureText(error: unknown, file: File): string {
  if (error instanceof ApiError && error.status === 400) {
    const size = error.fieldErrors.size;
    if (size) return `Too large (${sizeText(file.size)}): ${size.join(' ')}`;
    const messages = Object.entries(error.fieldErrors).map(([path, text]) => `${path}: ${text.join(' ')}`);
    return `Refused: ${[...messages, ...error.formErrors].join(' ') || error.message}`;
  }
  if (error instanceof ApiError) return `Not uploaded: ${error.message}`;
  if (error instanceof StorageRefusedError) {
    return error.code === 'EntityTooLarge' ? `Too large (${sizeText(file.size)}).` : `Not uploaded: ${error.message}`;
  }
  return 'Not uploaded: no answer from the service.';
}

export function referenceFiles(): ReferenceFiles {
  const entries: Entry[] = [];
  let room = { max: 0, urls: 0, model: '' };

  const inputId = uid('files');
  const input = h('input', {
    type: 'file',
    id: inputId,
    name: 'referenceFiles',
    multiple: true,
    accept: UPLOAD_TYPES.join(','),
    'aria-describedby': `${inputId}-hint`,
  });
  const list = h('ul', { class: 'files', 'aria-label': 'Files chosen' });
  const zone = h(
    'div',
    { class: 'drop-zone', 'data-drop-zone': '' },
    h('p', {}, 'Drop images here, or '),
    h('label', { for: inputId }, 'Reference image files'),
    input,
    h('p', { class: 'hint', id: `${inputId}-hint` }, 'PNG, JPEG or WebP, sent straight to storage.'),
  );
  const element = h('div', { class: 'field' }, zone, list);

  const render = (entry: Entry) => {
    const status = h(
      'p',
      {
        class: entry.state === 'error' || entry.state === 'too-many' ? 'field-error file-state' : 'hint file-state',
        role: 'status',
      },
      entry.state === 'checking'
        ? 'Checking…'
        : entry.state === 'uploading'
          ? 'Uploading…'
          : entry.state === 'ready'
            ? 'Uploaded.'
            : (entry.message ?? 'Not usable.'),
    );
    const remove = h(
      'button',
      { type: 'button', class: 'secondary', 'aria-label': `Remove ${entry.file.name}` },
      'Remove',
    );
    remove.addEventListener('click', () => {
      const at = entries.indexOf(entry);
      if (at >= 0) entries.splice(at, 1);
      URL.revokeObjectURL(entry.preview);
      entry.item.remove();
      recount();
    });
    entry.item.dataset.state = entry.state;
    replace(
      entry.item,
      h('img', {
        src: entry.preview,
        alt: `Preview of ${entry.file.name}`,
        class: 'thumb',
        // Bytes that are no picture: no broken-image icon, the line says why.
        onerror: (event: Event) => {
          (event.target as HTMLImageElement).hidden = true;
        },
      }),
      h('span', { class: 'file-name' }, entry.file.name),
      ' ',
      h('span', { class: 'file-size' }, sizeText(entry.file.size)),
      status,
      remove,
    );
  };

  /** Uploads a checked file that has its place within the model's count. */
  const start = (entry: Entry) => {
    entry.state = 'uploading';
    entry.message = undefined;
    render(entry);
    /** The model changed meanwhile and this file no longer fits (read anew after the wait). */
    const displaced = () => (entry.state as EntryState) === 'too-many';
    entry.done = (async () => {
      try {
        const reference = await uploadFile(entry.file, entry.file.type as UploadType);
        // It waits for room, and is uploaded again then.
        if (displaced()) return;
        entry.reference = reference;
        entry.state = 'ready';
      } catch (error) {
        if (displaced()) return;
        entry.state = 'error';
        entry.message = uploadFailureText(error, entry.file);
      }
      render(entry);
      // A refused file frees its place for the next one.
      if (entry.state === 'error') recount();
    })();
  };

  /** Checks a new file's type (declared, then by its first bytes) before it may take a place. */
  const check = (entry: Entry) => {
    entry.done = (async () => {
      const head = new Uint8Array(await entry.file.slice(0, SNIFF_BYTES).arrayBuffer());
      const problem = fileProblem(entry.file.type, head);
      if (problem) {
        entry.state = 'error';
        entry.message = problem;
        render(entry);
      } else {
        // Not rendered as such: the count right below gives it its place (and starts it) or says too many.
        entry.state = 'too-many';
      }
      recount();
    })();
  };

  /** Gives each usable file a place within the model's count, in order; the rest wait as too many. */
  const recount = () => {
    let free = Math.max(0, room.max - room.urls);
    for (const entry of entries) {
      if (entry.state === 'error') continue;
      if (free > 0) {
        free -= 1;
        if (entry.state === 'too-many') start(entry);
      } else if (entry.state === 'checking') {
        // Counted once its check is done.
      } else {
        // (Again when the model or the URLs changed: the message says the current count.)
        entry.state = 'too-many';
        entry.reference = undefined;
        entry.message = `Too many: ${room.model} takes up to ${room.max} reference images${room.urls ? ` (${room.urls} given as URLs)` : ''}.`;
        render(entry);
      }
    }
  };

  const add = (files: Iterable<File>) => {
    for (const file of files) {
      const entry: Entry = {
        file,
        state: 'checking',
        done: Promise.resolve(),
        preview: URL.createObjectURL(file),
        item: h('li', { class: 'file', 'data-file-name': file.name }),
      };
      entries.push(entry);
      list.append(entry.item);
      render(entry);
      check(entry);
    }
  };

  input.addEventListener('change', () => {
    add(Array.from(input.files ?? []));
    // The same file may be chosen again after its removal.
    input.value = '';
  });
  zone.addEventListener('dragover', (event) => {
    event.preventDefault();
    zone.classList.add('dragging');
  });
  zone.addEventListener('dragleave', () => zone.classList.remove('dragging'));
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    zone.classList.remove('dragging');
    add(Array.from(event.dataTransfer?.files ?? []));
  });

  /** The entries sent at the last submit, in the order of their references. */
  let sent: Entry[] = [];

  return {
    element,
    setRoom(max, urls, model) {
      room = { max, urls, model };
      recount();
    },
    async references() {
      // A check may start an upload, a refused upload another's: until none is in progress.
      while (entries.some((entry) => entry.state === 'checking' || entry.state === 'uploading')) {
        await Promise.all(entries.map((entry) => entry.done));
      }
      const problems = entries
        .filter((entry) => entry.state === 'error' || entry.state === 'too-many')
        .map((entry) => `${entry.file.name}: ${entry.message ?? 'not usable'}`);
      sent = entries.filter((entry) => entry.state === 'ready');
      return { references: sent.map((entry) => entry.reference ?? ''), problems };
    },
    setSubmitError(index, message) {
      const entry = sent[index];
      if (!entry) return false;
      entry.state = 'error';
      entry.message = message;
      render(entry);
      return true;
    },
    get count() {
      return entries.length;
    },
  };
}
