import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { clientTypesText } from '../../bin/openapi';
import { openApiDocument, openApiDocumentText } from '../../contract/openapi-document';
import { ROUTES } from '../../lib/routes';

const DOCUMENT = join(__dirname, '..', '..', 'docs', 'openapi.json');

describe('the OpenAPI document', () => {
  test('docs/openapi.json is what the code generates (run `npm run openapi` after a contract change)', () => {
    // Act
    const committed = readFileSync(DOCUMENT, 'utf8');

    // Assert
    expect(committed).toBe(openApiDocumentText());
  });

  test("the typed client's types are what openapi-typescript makes of the committed document", () => {
    // Act
    const committed = readFileSync(join(__dirname, '..', '..', 'client', 'src', 'openapi.d.ts'), 'utf8');

    // Assert
    expect(committed).toBe(clientTypesText());
  });

  test('a real OpenAPI 3.1 validator accepts it', () => {
    // Prepare: the validator is an ES module that jest's CommonJS runtime cannot load; run it in Node.
    const script = `
      import { Validator } from '@seriousme/openapi-schema-validator';
      const validator = new Validator();
      const result = await validator.validate(process.argv[1]);
      console.log(JSON.stringify({ ...result, version: validator.version }));`;

    // Act
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script, DOCUMENT], {
      cwd: join(__dirname, '..', '..'),
      encoding: 'utf8',
    });

    // Assert
    expect(JSON.parse(output)).toEqual({ valid: true, version: '3.1' });
  });

  test('every route of the route table is a documented operation', () => {
    // Act
    const paths = openApiDocument('0.0.0').paths as Record<string, Record<string, unknown>>;

    // Assert
    for (const route of ROUTES) expect(paths[route.path]?.[route.method.toLowerCase()]).toBeDefined();
  });

  test('request fields carry their limits, counted as code points', () => {
    // Act
    const schemas = (
      openApiDocument('0.0.0').components as {
        schemas: Record<string, { properties: Record<string, Record<string, unknown>> }>;
      }
    ).schemas;

    // Assert
    expect(schemas.ImageRequest?.properties.prompt).toMatchObject({ type: 'string', minLength: 1, maxLength: 20000 });
    expect(schemas.VideoRequest?.properties.prompt).toMatchObject({ maxLength: 4000 });
    expect(schemas.ImageRequest?.properties.numOutputs).toMatchObject({ type: 'integer', minimum: 1, maximum: 10 });
    expect(schemas.VideoRequest?.properties.inputMode).toMatchObject({ enum: ['text_to_video', 'image_to_video'] });
  });
});
