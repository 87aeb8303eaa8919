/**
 * New task: an image or video form whose choices (models, input modes, durations, resolutions, aspect
 * ratios, how many reference images) all come from `GET /api/ai/models`, the price worked out from the
 * same answer before submitting, then the task's page, which follows it to the end. The service
 * debits what it computes itself; the price shown here is the one the models answer lists.
 */
import { ApiError, listModels, type Model, submitTask } from '../api';

import { field, h, replace, uid } from '../dom';
import { credits } from '../format';
import { priceOf } from '../price';
import type { PageContext } from './page';
import { referenceFiles } from './reference-files';

const MODE_NAMES: Record<string, string> = {
  text_to_image: 'Text to image',
  image_to_image: 'Image to image (edit reference images)',
  text_to_video: 'Text to video',
  image_to_video: 'Image to video',
};

function options(select: HTMLSelectElement, values: { value: string; label: string }[], preferred?: string): void {
  const keep = preferred ?? select.value;
  replace(select, ...values.map(({ value, label }) => h('option', { value }, label)));
  if (values.some(({ value }) => value === keep)) select.value = keep;
}

export async function renderNewTask(main: HTMLElement, context: PageContext): Promise<void> {
  context.setTitle('New task');
  const { models } = await listModels();
  if (!context.alive()) return;
  const initialType = context.params.get('type') === 'video' ? 'video' : 'image';

  const typeName = uid('type');
  const typeRadios = (['image', 'video'] as const).map((value) => {
    const id = uid('type');
    const input = h('input', { type: 'radio', name: typeName, id, value, checked: value === initialType });
    return {
      value,
      input,
      label: h('label', { for: id, class: 'radio' }, input, value === 'image' ? ' Image' : ' Video'),
    };
  });
  const typeFieldset = h(
    'fieldset',
    { class: 'field' },
    h('legend', {}, 'Type'),
    ...typeRadios.map(({ label }) => label),
  );

  const model = field('Model', h('select', { name: 'model' }));
  const mode = field('Input', h('select', { name: 'inputMode' }));
  const references = field(
    'Reference image URLs',
    h('textarea', { name: 'inputImageUrls', rows: 2, spellcheck: 'false' }),
    'One http(s) URL per line.',
  );
  const files = referenceFiles();
  const prompt = field('Prompt', h('textarea', { name: 'prompt', rows: 4, required: true }));
  const resolution = field('Resolution', h('select', { name: 'resolution' }));
  const duration = field('Duration', h('select', { name: 'duration' }));
  const numOutputs = field(
    'Number of images',
    h('input', { name: 'numOutputs', type: 'number', min: 1, max: 10, value: 1 }),
  );
  const aspectRatio = field('Aspect ratio', h('select', { name: 'aspectRatio' }));
  const providerInput = field(
    'Provider options (JSON object, optional)',
    h('textarea', { name: 'providerInput', rows: 3, spellcheck: 'false' }),
    'Passed to the provider as providerInput; it cannot change the price.',
  );
  const price = h('p', { class: 'price', role: 'status', 'aria-live': 'polite' });
  const formError = h('p', { class: 'field-error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit' }, 'Submit');

  const selectedType = (): 'image' | 'video' =>
    typeRadios.find(({ input }) => input.checked)?.value === 'video' ? 'video' : 'image';
  const selectedModel = (): Model | undefined => models.find((one) => one.id === model.control.value);
  const referenceLines = () =>
    references.control.value
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '');

  /** Rebuilds the choices that depend on the type and model, keeping what still applies. */
  const update = () => {
    const type = selectedType();
    options(
      model.control as HTMLSelectElement,
      models.filter((one) => one.type === type).map((one) => ({ value: one.id, label: one.id })),
    );
    const chosen = selectedModel();
    if (!chosen) return;
    options(
      mode.control as HTMLSelectElement,
      chosen.inputModes.map((value) => ({ value, label: MODE_NAMES[value] ?? value })),
    );
    const withImages = mode.control.value === 'image_to_image' || mode.control.value === 'image_to_video';
    references.element.hidden = !withImages;
    files.element.hidden = !withImages;
    const hint = references.element.querySelector('.hint');
    if (hint) {
      hint.textContent = `One http(s) URL per line; with the files below, up to ${chosen.maxReferenceImages} images.`;
    }
    files.setRoom(chosen.maxReferenceImages, referenceLines().length, chosen.id);
    prompt.control.setAttribute('maxlength', String(chosen.maxPromptLength));
    options(aspectRatio.control as HTMLSelectElement, [
      { value: '', label: 'Model default' },
      ...chosen.aspectRatios.map((value) => ({ value, label: value })),
    ]);
    numOutputs.element.hidden = chosen.type !== 'image';
    duration.element.hidden = chosen.type !== 'video';
    if (chosen.type === 'image') {
      options(
        resolution.control as HTMLSelectElement,
        chosen.prices.map((tier) => ({ value: tier.resolution, label: tier.resolution })),
      );
    } else {
      options(
        resolution.control as HTMLSelectElement,
        chosen.resolutions.map((value) => ({ value, label: value })),
      );
      options(
        duration.control as HTMLSelectElement,
        chosen.durations.map((value) => ({ value: String(value), label: `${value} seconds` })),
        duration.control.value || String(chosen.defaultDuration),
      );
    }
    const cost = priceOf(chosen, {
      resolution: resolution.control.value,
      duration: Number(duration.control.value),
      numOutputs: Number(numOutputs.control.value),
    });
    price.textContent = cost === undefined ? 'No price for these choices.' : `Price: ${credits(cost)}`;
    price.dataset.credits = cost === undefined ? '' : String(cost);
    submit.disabled = cost === undefined;
  };

  /** The request body, or undefined (with the error shown) when the provider options are not JSON. */
  const body = (chosen: Model, uploaded: string[]): Record<string, unknown> | undefined => {
    let extra: Record<string, unknown> = {};
    const raw = providerInput.control.value.trim();
    if (raw) {
      try {
        const parsed: unknown = JSON.parse(raw);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
        extra = parsed as Record<string, unknown>;
      } catch {
        providerInput.setError('Enter a JSON object, e.g. {"style": "watercolor"}, or leave it empty.');
        return undefined;
      }
    }
    const request: Record<string, unknown> = {
      model: chosen.id,
      prompt: prompt.control.value,
      providerInput: { ...extra, resolution: resolution.control.value },
    };
    if (aspectRatio.control.value) request.aspectRatio = aspectRatio.control.value;
    const withImages = !references.element.hidden;
    if (withImages) request.inputImageUrls = [...referenceLines(), ...uploaded];
    if (chosen.type === 'image') {
      request.numOutputs = Number(numOutputs.control.value);
    } else {
      request.inputMode = mode.control.value;
      request.duration = Number(duration.control.value);
    }
    return request;
  };

  const fieldsByPath: Record<string, ReturnType<typeof field>> = {
    model: model,
    inputMode: mode,
    inputImageUrls: references,
    prompt,
    duration,
    numOutputs,
    aspectRatio,
    providerInput,
  };

  const send = async () => {
    const all = [model, mode, references, prompt, resolution, duration, numOutputs, aspectRatio, providerInput];
    for (const one of all) one.setError(undefined);
    formError.hidden = true;
    const chosen = selectedModel();
    if (!chosen) return;
    submit.disabled = true;
    const withImages = !references.element.hidden;
    const urlCount = withImages ? referenceLines().length : 0;
    let uploaded: string[] = [];
    if (withImages && files.count > 0) {
      formError.textContent = 'Waiting for the files to upload…';
      formError.hidden = false;
      const chosenFiles = await files.references();
      formError.hidden = true;
      if (chosenFiles.problems.length > 0) {
        submit.disabled = false;
        formError.textContent = `Not submitted: remove the files marked with a problem first (${chosenFiles.problems.join(' ')})`;
        formError.hidden = false;
        formError.focus();
        return;
      }
      uploaded = chosenFiles.references;
    }
    const request = body(chosen, uploaded);
    if (!request) {
      submit.disabled = false;
      return;
    }
    try {
      const accepted = await submitTask(chosen.type, request);
      await context.refreshBalance();
      location.hash = `#/tasks/${encodeURIComponent(accepted.taskId)}`;
    } catch (error) {
      submit.disabled = false;
      if (!(error instanceof ApiError)) throw error;
      const loose: string[] = [];
      if (error.status === 400) {
        for (const [path, messages] of Object.entries(error.fieldErrors)) {
          const [top = path, index] = path.split('.');
          // An uploaded file's refusal goes on that file's line.
          if (top === 'inputImageUrls' && Number(index) >= urlCount) {
            if (files.setSubmitError(Number(index) - urlCount, messages.join(' '))) continue;
          }
          const target = path === 'providerInput.resolution' ? resolution : fieldsByPath[top];
          if (target) target.setError(`${path}: ${messages.join(' ')}`);
          else loose.push(`${path}: ${messages.join(' ')}`);
        }
        loose.push(...error.formErrors);
      } else if (error.status === 402) {
        loose.push(`Not enough credits: this task needs ${error.body.required}, the balance is ${error.body.balance}.`);
      } else {
        loose.push(error.message);
      }
      if (loose.length > 0) {
        formError.textContent = loose.join(' ');
        formError.hidden = false;
      }
      main.querySelector<HTMLElement>('[aria-invalid="true"], .field-error:not([hidden])')?.focus();
    }
  };

  const form = h(
    'form',
    {
      class: 'card',
      novalidate: true,
      'aria-label': 'New task',
      onsubmit: (event: Event) => {
        event.preventDefault();
        void send();
      },
      onchange: update,
      oninput: (event: Event) => {
        if (event.target === numOutputs.control || event.target === references.control) update();
      },
    },
    typeFieldset,
    model.element,
    mode.element,
    references.element,
    files.element,
    prompt.element,
    resolution.element,
    duration.element,
    numOutputs.element,
    aspectRatio.element,
    h('details', {}, h('summary', {}, 'Advanced'), providerInput.element),
    price,
    formError,
    submit,
  );
  formError.tabIndex = -1;
  replace(main, h('h1', { tabindex: -1 }, 'New task'), form);
  update();
}
