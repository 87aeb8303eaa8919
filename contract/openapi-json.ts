/** The building blocks every part of the OpenAPI document (contract/openapi-document.ts) is written with. */

/** A JSON object of the document. */
export type Json = Record<string, unknown>;

/** A reference to a schema of the document's components. */
export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
/** A JSON response or request body with its description. */
export const json = (schema: Json, description: string): Json => ({
  description,
  content: { 'application/json': { schema } },
});
