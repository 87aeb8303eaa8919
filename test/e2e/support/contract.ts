/**
 * Every answer the e2e suite receives is checked against the committed OpenAPI document
 * (docs/openapi.json): its status must be documented for the operation, and a JSON body must match the
 * documented schema. So the document cannot drift from the service.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

interface MediaType {
  schema?: Record<string, unknown>;
}
interface ResponseObject {
  content?: Record<string, MediaType>;
}
interface Operation {
  responses: Record<string, ResponseObject>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

const document = JSON.parse(
  readFileSync(join(__dirname, '..', '..', '..', 'docs', 'openapi.json'), 'utf8'),
) as Document;
const DOCUMENT_ID = 'openapi.json';
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ ...document, $id: DOCUMENT_ID });

/** Path templates as patterns, most specific (fewest parameters) first. */
const TEMPLATES = Object.keys(document.paths)
  .map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    params: (template.match(/\{/g) ?? []).length,
  }))
  .sort((a, b) => a.params - b.params);

const validators = new Map<string, ValidateFunction>();

function validatorFor(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (!validate) {
    validate = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
    validators.set(pointer, validate);
  }
  return validate;
}

const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** The parts of the API the document describes; sign-in redirects, pages and media are not JSON APIs. */
const DOCUMENTED = /^\/api\/(ai\/|openapi\.json$|session$|keys|audit)/;

/**
 * Throws when the answer contradicts the document: an undocumented status for a documented operation, a
 * JSON body that does not match its schema, or a 4xx/5xx body of another shape than `{ error }`.
 */
export function checkAgainstContract(
  method: string,
  url: string,
  status: number,
  contentType: string,
  body: unknown,
): void {
  let path: string;
  try {
    path = new URL(url, 'http://x').pathname;
  } catch {
    return; // not a path the gateway could route (fuzzing sends such targets)
  }
  if (!DOCUMENTED.test(path) || method === 'HEAD' || method === 'OPTIONS') return;
  const template = TEMPLATES.find((t) => t.pattern.test(path))?.template;
  const operation = template ? document.paths[template]?.[method.toLowerCase()] : undefined;
  const isJson = /^application\/json/i.test(contentType);
  if (!operation || !template) {
    // Unknown route or method: the gateway's own answer, which must still be a JSON error.
    if (status >= 400 && isJson && !(typeof body === 'object' && body !== null && 'error' in body)) {
      throw new Error(`${method} ${path} answered ${status} without { error }`);
    }
    return;
  }
  const code = operation.responses[String(status)]
    ? String(status)
    : operation.responses.default
      ? 'default'
      : undefined;
  if (code === undefined)
    throw new Error(`${method} ${template} answered ${status}, which the OpenAPI document does not list`);
  const schema = operation.responses[code]?.content?.['application/json']?.schema;
  if (!schema) return;
  if (!isJson)
    throw new Error(`${method} ${template} answered ${status} with ${contentType || 'no type'}, documented as JSON`);
  const pointer = `/paths/${escapePointer(template)}/${method.toLowerCase()}/responses/${code}/content/application~1json/schema`;
  const validate = validatorFor(pointer);
  if (!validate(body)) {
    throw new Error(
      `${method} ${template} answered ${status} with a body the OpenAPI document does not allow: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
    );
  }
}
